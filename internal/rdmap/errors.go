package rdmap

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Errors of the local QP API (never sent as Terminates).
var (
	ErrSQFull = errors.New("send queue full")
	// ErrSQNeedsSignaled: the send queue's last free slot is kept for a
	// signaled WR, whose consumed completion frees the unsignaled ones.
	ErrSQNeedsSignaled = errors.New("the last free send-queue slot needs a signaled work request")
	ErrRQFull          = errors.New("receive queue full")
	ErrTooManySGE      = errors.New("too many scatter/gather elements")
	ErrBadSGE          = errors.New("scatter/gather element outside its region")
	ErrBadOp           = errors.New("unknown work request operation")
	ErrQPState         = errors.New("queue pair is not in a state that accepts work")
	ErrMessageSize     = errors.New("message larger than the maximum message size")
	ErrInlineTooLong   = errors.New("inline data longer than the QP's inline limit")
	ErrReadSinkSGE     = errors.New("an RDMA Read sink must be a single SGE")
	ErrAccess          = errors.New("a local buffer lacks the access the operation needs")
	ErrNoORD           = errors.New("RDMA Read or atomic with an ORD of 0: the peer accepts none")
	// ErrNotSupportedByPeer: the operation needs an RDMAP extension the
	// peer did not agree to; nothing was sent (extensions.md §3.1).
	ErrNotSupportedByPeer = errors.New("operation not supported by the peer (the RDMAP extension it needs was not agreed)")
	// ErrMisaligned: an atomic's remote TO is not 8-byte aligned.
	ErrMisaligned = errors.New("atomic target must be 8-byte aligned")
	// ErrRegionInvalid: an Inline WR's buffer belongs to a registration
	// that is no longer valid, so its bytes cannot be copied.
	ErrRegionInvalid = errors.New("a local buffer's registration is no longer valid")
	// ErrLocalInvalidate: a local-invalidate work request named an STag
	// that is unknown, already invalid, or of another protection domain.
	ErrLocalInvalidate = errors.New("STag cannot be invalidated")
	// ErrPD: a scatter/gather element names a region registered in
	// another protection domain than the QP's (RFC 5040 §6.4).
	ErrPD = errors.New("a local buffer belongs to another protection domain")
)

// Why a QP leaves RTS without a Terminate.
var (
	// ErrPeerDisconnected: the peer closed the connection (TCP FIN)
	// without a Terminate.
	ErrPeerDisconnected = errors.New("peer disconnected")
	// ErrLocallyClosed: the QP was closed by its owner.
	ErrLocallyClosed = errors.New("QP closed locally")
	// ErrDisconnected: the connection was closed in order (Disconnect on
	// this side, then the peer's close).
	ErrDisconnected = errors.New("disconnected")
	// ErrLocalProtection: a work request's local buffer was invalidated,
	// deregistered or re-keyed while the work request was outstanding; it
	// completed with rdma.StatusLocalProtection and the QP moved to ERROR, as
	// verbs does.
	ErrLocalProtection = errors.New("a work request's local buffer was invalidated or deregistered")
	// ErrLeaseRevoked: an invalidation or deregistration could not wait
	// any longer for the bytes this QP was still sending from the region
	// (mem.Holder.Revoke): the QP failed so that they are released.
	ErrLeaseRevoked = errors.New("a registration this QP was sending from was revoked")
)

// TerminateError is a fatal stream error reported with an RDMAP Terminate
// message (RFC 5040 §4.8): one this side sent because it found a violation
// in what the peer sent (Sent), or one the peer sent (and then Layout and
// Control say how it was encoded: Linux siw does not use the RFC layout).
type TerminateError struct {
	Code rdma.TermCode
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

// Unwrap returns the cause.
func (e *TerminateError) Unwrap() error { return e.Cause }

// TerminateCause describes cause, the violation behind a Terminate of
// code, without repeating the code: a *wire.ProtocolError of the same code
// is given by what it found only, and not at all when that is the code's
// own name ("base or bounds violation").
func TerminateCause(code rdma.TermCode, cause error) string {
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

// ConnectionError is a failure of the connection underneath the stream
// (reset, timeout, closed), reported without a Terminate.
type ConnectionError struct{ Err error }

// Error describes the failure.
func (e *ConnectionError) Error() string { return "connection failed: " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ConnectionError) Unwrap() error { return e.Err }

// Violations found by the receive path, beyond those of the wire and fpdu
// packages. The choice of code where the RFCs leave one is the project's
// (docs/wire.md, docs/extensions.md §6).
var (
	ErrUnexpectedReadResponse = &wire.ProtocolError{What: "Read Response with no outstanding Read", Code: rdma.TermRDMAPUnexpectedOpcode}
	ErrReadResponseSTag       = &wire.ProtocolError{What: "Read Response to an STag other than the Read's sink", Code: rdma.TermDDPInvalidSTag}
	ErrReadResponseRange      = &wire.ProtocolError{What: "Read Response outside the Read's sink range", Code: rdma.TermDDPBaseBounds}
	ErrReadResponseShort      = &wire.ProtocolError{What: "Read Response shorter than the Read", Code: rdma.TermDDPBaseBounds}
	ErrNoRecvBuffer           = &wire.ProtocolError{What: "Send with no receive posted", Code: rdma.TermDDPNoBuffer}
	ErrInvalidMO              = &wire.ProtocolError{What: "untagged segment at an unexpected MO", Code: rdma.TermDDPInvalidMO}
	ErrRecvTooLong            = &wire.ProtocolError{What: "Send longer than the posted receive", Code: rdma.TermDDPTooLong}
	ErrReadRequestLength      = &wire.ProtocolError{What: "Read Request of the wrong length", Code: rdma.TermRDMAPOpUnspecified}
	ErrIRDExceeded            = &wire.ProtocolError{What: "more Read and Atomic Requests outstanding than IRD", Code: rdma.TermRDMAPStreamCatastroph}
	// RFC 7306 §5: a response that matches nothing outstanding is an
	// error surfaced and the stream terminated (codes: project choice).
	ErrUnexpectedAtomicResponse = &wire.ProtocolError{What: "Atomic Response with no outstanding Atomic Request", Code: rdma.TermRDMAPUnexpectedOpcode}
	ErrAtomicResponseID         = &wire.ProtocolError{What: "Atomic Response with an unexpected request identifier", Code: rdma.TermRDMAPOpUnspecified}
	// V2 draft (codes: project choice, the untagged-buffer analogues of
	// RFC 5041's).
	ErrReadV2TooLong = &wire.ProtocolError{What: "Read V2 Response longer than requested", Code: rdma.TermDDPTooLong}
	ErrReadV2Short   = &wire.ProtocolError{What: "Read V2 Response shorter than requested", Code: rdma.TermDDPInvalidMO}
	// A single-segment message whose segment is not its first: the
	// message would not start at offset 0.
	ErrSingleSegmentMO = &wire.ProtocolError{What: "single-segment message at a non-zero MO", Code: rdma.TermDDPInvalidMO}
	// A single-segment message whose segment is not its last: the message
	// would run past the fixed size of its header.
	ErrSingleSegmentNotLast = &wire.ProtocolError{What: "single-segment message without the L bit", Code: rdma.TermDDPTooLong}
	// A continuing segment of an untagged message whose opcode is not the
	// first segment's (a Send with Immediate ended by a plain Send).
	ErrSegmentOpcode = &wire.ProtocolError{What: "segment's opcode differs from its message's first segment", Code: rdma.TermRDMAPUnexpectedOpcode}
	// A tagged Write's target was invalidated or deregistered while the
	// segment was being placed: the rest of it is refused as any later
	// segment is (docs/semantics.md rule 6).
	ErrTargetInvalidated = &wire.ProtocolError{What: "the Write's target was invalidated during the segment", Code: rdma.TermDDPInvalidSTag}
	// Sentinels of the MSN checks (DDP/2/0x03), one per message kind.
	errSendMSN       = &wire.ProtocolError{What: "Send MSN out of range", Code: rdma.TermDDPMSNRange}
	errImmMSN        = &wire.ProtocolError{What: "Immediate Data MSN out of range", Code: rdma.TermDDPMSNRange}
	errReadReqMSN    = &wire.ProtocolError{What: "Read Request MSN out of range", Code: rdma.TermDDPMSNRange}
	errReadV2ReqMSN  = &wire.ProtocolError{What: "Read V2 Request MSN out of range", Code: rdma.TermDDPMSNRange}
	errReadV2RespMSN = &wire.ProtocolError{What: "Read V2 Response MSN out of range", Code: rdma.TermDDPMSNRange}
	errAtomicReqMSN  = &wire.ProtocolError{What: "Atomic Request MSN out of range", Code: rdma.TermDDPMSNRange}
	errAtomicRespMSN = &wire.ProtocolError{What: "Atomic Response MSN out of range", Code: rdma.TermDDPMSNRange}
)

// placementError is the violation of a failed access check.
func placementError(code rdma.TermCode, why mem.Reason) error {
	return wire.NewProtocolError(why.String(), code)
}

// stateError is ErrQPState for a QP in state, with the error that took it
// out of RTS when there is one.
func stateError(state rdma.QPState, err error) error {
	if err == nil {
		return fmt.Errorf("%w (%v)", ErrQPState, state)
	}
	return fmt.Errorf("%w (%v): %w", ErrQPState, state, err)
}

// remoteStatus maps the code of a Terminate the peer sent to the status of
// the work request it most likely concerns.
func remoteStatus(c rdma.TermCode) rdma.Status {
	switch {
	case c.Layer() == rdma.LayerRDMAP && c.Type() == rdma.TypeRemoteProtection,
		c.Layer() == rdma.LayerDDP && c.Type() == rdma.TypeTaggedBuffer:
		return rdma.StatusRemoteAccess
	}
	return rdma.StatusRemoteOperation
}

// ErrSharedRecv: PostRecv on a Core that takes its receives from a shared
// receive queue: post them there.
var ErrSharedRecv = errors.New("the QP draws its receives from a shared receive queue: post to the SRQ")
