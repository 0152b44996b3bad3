package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// TerminateError is a fatal stream error reported with an RDMAP Terminate
// message (RFC 5040 §4.8): one this side sent because it found a violation
// in what the peer sent (Sent), or one the peer sent (and then Layout and
// Control say how it was encoded: Linux siw does not use the RFC layout).
type TerminateError struct {
	Code wire.TermCode
	Sent bool
	// Cause is the violation found (Sent), or a problem with the received
	// Terminate itself; nil otherwise.
	Cause error

	// Received Terminates: the control field as it arrived and its layout.
	Layout  wire.TermLayout
	Control [wire.TermControlLen]byte

	// Sent Terminates: the offending segment's length and headers, attached
	// to the message (M, D and R bits).
	segLen  uint16
	ddpHdr  []byte
	rdmaHdr []byte
}

// Error describes the Terminate.
func (e *TerminateError) Error() string {
	dir := "received Terminate"
	if e.Sent {
		dir = "sent Terminate"
	}
	s := fmt.Sprintf("%s %v", dir, e.Code)
	if !e.Sent && e.Layout != wire.LayoutRFC {
		s += fmt.Sprintf(" [%v layout, control % x]", e.Layout, e.Control)
	}
	if why := TerminateCause(e.Code, e.Cause); why != "" {
		s += ": " + why
	}
	return s
}

// TerminateCause describes cause, the violation behind a Terminate of
// code, without repeating the code: a *wire.ProtocolError of the same code
// is given by what it found only, and not at all when that is the code's
// own name ("base or bounds violation").
func TerminateCause(code wire.TermCode, cause error) string {
	if cause == nil {
		return ""
	}
	s := cause.Error()
	var pe *wire.ProtocolError
	if errors.As(cause, &pe) && pe.Code == code {
		s = strings.Replace(s, pe.Error(), pe.What, 1)
		if strings.EqualFold(s, code.Name()) {
			return ""
		}
	}
	return s
}

// Unwrap returns the cause.
func (e *TerminateError) Unwrap() error { return e.Cause }

// ConnectionError is a failure of the connection underneath the stream
// (reset, timeout, closed), reported without a Terminate.
type ConnectionError struct{ Err error }

// Error describes the failure.
func (e *ConnectionError) Error() string { return "connection failed: " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ConnectionError) Unwrap() error { return e.Err }

// ErrPeerDisconnected: the peer closed the connection (TCP FIN) without a
// Terminate while work could still be outstanding.
var ErrPeerDisconnected = errors.New("peer disconnected")

// ErrLocallyClosed: the QP was closed by its owner.
var ErrLocallyClosed = errors.New("QP closed locally")

// Violations found by the receive path, beyond those of the wire and fpdu
// packages. The choice of code where the RFCs leave one is the project's
// (docs/semantics.md).
var (
	ErrUnexpectedReadResponse = &wire.ProtocolError{What: "Read Response with no outstanding Read", Code: wire.TermRDMAPUnexpectedOpcode}
	ErrReadResponseSTag       = &wire.ProtocolError{What: "Read Response to an STag other than the Read's sink", Code: wire.TermDDPInvalidSTag}
	ErrReadResponseRange      = &wire.ProtocolError{What: "Read Response outside the Read's sink range", Code: wire.TermDDPBaseBounds}
	ErrReadResponseShort      = &wire.ProtocolError{What: "Read Response shorter than the Read", Code: wire.TermDDPBaseBounds}
	ErrNoRecvBuffer           = &wire.ProtocolError{What: "Send with no receive posted", Code: wire.TermDDPNoBuffer}
	ErrInvalidMO              = &wire.ProtocolError{What: "untagged segment at an unexpected MO", Code: wire.TermDDPInvalidMO}
	ErrRecvTooLong            = &wire.ProtocolError{What: "Send longer than the posted receive", Code: wire.TermDDPTooLong}
	ErrReadRequestLength      = &wire.ProtocolError{What: "Read Request of the wrong length", Code: wire.TermRDMAPOpUnspecified}
	ErrIRDExceeded            = &wire.ProtocolError{What: "more Read and Atomic Requests outstanding than IRD", Code: wire.TermRDMAPStreamCatastroph}
	// RFC 7306 §5: a response that matches nothing outstanding is an
	// error surfaced and the stream terminated (codes: project choice).
	ErrUnexpectedAtomicResponse = &wire.ProtocolError{What: "Atomic Response with no outstanding Atomic Request", Code: wire.TermRDMAPUnexpectedOpcode}
	ErrAtomicResponseID         = &wire.ProtocolError{What: "Atomic Response with an unexpected request identifier", Code: wire.TermRDMAPOpUnspecified}
	// V2 draft (codes: project choice, the untagged-buffer analogues of
	// RFC 5041's).
	ErrReadV2TooLong = &wire.ProtocolError{What: "Read V2 Response longer than requested", Code: wire.TermDDPTooLong}
	ErrReadV2Short   = &wire.ProtocolError{What: "Read V2 Response shorter than requested", Code: wire.TermDDPInvalidMO}
	// A single-segment message (segment.go) whose segment is not its
	// first: the message would not start at offset 0.
	ErrSingleSegmentMO = &wire.ProtocolError{What: "single-segment message at a non-zero MO", Code: wire.TermDDPInvalidMO}
	// A single-segment message whose segment is not its last: the message
	// would run past the fixed size of its header.
	ErrSingleSegmentNotLast = &wire.ProtocolError{What: "single-segment message without the L bit", Code: wire.TermDDPTooLong}
	// A continuing segment of an untagged message whose opcode is not the
	// first segment's (a Send with Immediate ended by a plain Send).
	ErrSegmentOpcode = &wire.ProtocolError{What: "segment's opcode differs from its message's first segment", Code: wire.TermRDMAPUnexpectedOpcode}
)

// placementError is the violation of a failed access check.
func placementError(code wire.TermCode, why mem.Reason) error {
	return wire.NewProtocolError(why.String(), code)
}

// termDDP is a violation in a received segment: the Terminate carries the
// segment's DDP header (D) and length (M).
func (qp *QP) termDDP(err error, h *wire.DDPHeader, n int) error {
	var pe *wire.ProtocolError
	if !errors.As(err, &pe) {
		return err
	}
	return &TerminateError{Sent: true, Code: pe.Code, Cause: err, segLen: uint16(n), ddpHdr: wire.AppendDDPHeader(nil, h)}
}

// termRDMA is a violation in a received Read Request: the Terminate also
// carries its RDMA header (R).
func (qp *QP) termRDMA(err error, h *wire.DDPHeader, n int) error {
	e := qp.termDDP(err, h, n)
	if te, ok := e.(*TerminateError); ok {
		te.rdmaHdr = append([]byte(nil), qp.rx.hdr[wire.UntaggedHdrLen:wire.UntaggedHdrLen+wire.ReadRequestLen]...)
	}
	return e
}

// wireTerminate is the Terminate message for e.
func (e *TerminateError) wireTerminate() wire.Terminate {
	t := wire.Terminate{Code: e.Code}
	if e.ddpHdr != nil {
		t.M, t.D, t.SegLenPresent = true, true, true
		t.DDPSegLen = e.segLen
		t.DDPHeader = e.ddpHdr
	}
	if e.rdmaHdr != nil {
		t.R = true
		t.RDMAHeader = e.rdmaHdr
	}
	return t
}
