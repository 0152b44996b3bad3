package wire

import "github.com/goiwarp/iwarp/rdma"

// ProtocolError is a violation of the wire protocol found in received bytes.
// It names what was wrong and the Terminate code the violation maps to.
//
// Parsers return predeclared *ProtocolError values (the Err* variables of
// this and the other protocol packages), so that failing to parse allocates
// nothing and callers can test for a particular violation with errors.Is.
// Layers that add detail wrap them with fmt.Errorf("...: %w", err).
type ProtocolError struct {
	// What says what was wrong, in a few words.
	What string
	// Code is the Terminate code that reports this violation to the peer.
	Code rdma.TermCode
}

// Error returns "WHAT (Terminate LAYER/TYPE/0xCODE (meaning))".
func (e *ProtocolError) Error() string {
	return e.What + " (Terminate " + e.Code.String() + ")"
}

// NewProtocolError returns a ProtocolError for a violation with no predeclared
// value. Use it only off the data path: it allocates.
func NewProtocolError(what string, code rdma.TermCode) *ProtocolError {
	return &ProtocolError{What: what, Code: code}
}
