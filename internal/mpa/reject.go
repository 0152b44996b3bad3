package mpa

import "fmt"

// RejectError reports that the Responder rejected the connection with a
// Reply with R=1 (RFC 5044 §7.1.2). Get it with errors.As.
type RejectError struct {
	// Rev is the Rev of the rejecting Reply.
	Rev uint8
	// PrivateData is the Responder's private data, after the IRD/ORD
	// block of an enhanced Reply: the ULP's reason, if it gave one.
	PrivateData []byte
}

// Error returns "connection rejected by the peer (N bytes of private data)".
func (e *RejectError) Error() string {
	return fmt.Sprintf("connection rejected by the peer (%d bytes of private data)", len(e.PrivateData))
}
