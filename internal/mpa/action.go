package mpa

// Action is what a startup decision tells its side to do next
// (docs/spec/mpa.md "Which reaction for which startup error").
type Action uint8

// The actions.
const (
	// ActionAccept: the connection is established (after the RTR exchange
	// in peer-to-peer mode). A Responder sends its Reply first.
	ActionAccept Action = iota
	// ActionReject: a Responder sends a Reply with R=1 and closes; for an
	// Initiator, the peer rejected the connection: report and close.
	ActionReject
	// ActionClose: close without sending anything (garbage frames).
	ActionClose
	// ActionTerminate: an Initiator sends a Terminate with the LLP code
	// of the decision's error as its first FPDU, then closes.
	ActionTerminate
)

// String returns "accept", "reject", "close" or "terminate".
func (a Action) String() string {
	switch a {
	case ActionAccept:
		return "accept"
	case ActionReject:
		return "reject"
	case ActionClose:
		return "close"
	case ActionTerminate:
		return "terminate"
	}
	return "action?"
}
