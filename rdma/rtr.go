package rdma

// RTR is a set of ready-to-receive message types (RFC 6581 §5): the types an
// Initiator offers, or the one a Responder chose.
type RTR uint8

// The RTR types.
const (
	RTRWrite RTR = 1 << iota // C: a zero-length RDMA Write (to STag 1, TO 0, as siw sends)
	RTRRead                  // D: a zero-length RDMA Read Request, answered with a zero-length Read Response
	RTRSend                  // B: a zero-length Send, which consumes a receive at the Responder
	// RTRAll is every RTR type.
	RTRAll = RTRWrite | RTRRead | RTRSend
)

// String returns the set as "Write|Read|Send" (in preference order) or "none".
func (r RTR) String() string {
	s := ""
	for _, t := range [...]struct {
		r    RTR
		name string
	}{{RTRWrite, "Write"}, {RTRRead, "Read"}, {RTRSend, "Send"}} {
		if r&t.r != 0 {
			if s != "" {
				s += "|"
			}
			s += t.name
		}
	}
	if s == "" {
		return "none"
	}
	return s
}
