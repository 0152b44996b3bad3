package iwarp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// TermLayer is the layer a Terminate error was found in (RFC 5040 §4.8):
// LayerRDMAP, LayerDDP or LayerLLP.
type TermLayer = rdma.TermLayer

// Terminate layers.
const (
	LayerRDMAP = rdma.LayerRDMAP
	LayerDDP   = rdma.LayerDDP
	LayerLLP   = rdma.LayerLLP
)

// TermCode identifies a Terminate error: layer, error type and error code
// packed in 16 bits as the Terminate Control field carries them (RFC 5040
// §4.8, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §9). Its methods Layer, Type,
// Code, Name and String read it; the codes of the specifications are the
// constants below.
type TermCode = rdma.TermCode

// The Terminate codes of the specifications (see package rdma for each
// one's meaning, or TermCode.Name).
const (
	TermRDMAPCatastrophic     = rdma.TermRDMAPCatastrophic
	TermRDMAPInvalidSTag      = rdma.TermRDMAPInvalidSTag
	TermRDMAPBaseBounds       = rdma.TermRDMAPBaseBounds
	TermRDMAPAccessRights     = rdma.TermRDMAPAccessRights
	TermRDMAPSTagNotAssoc     = rdma.TermRDMAPSTagNotAssoc
	TermRDMAPTOWrap           = rdma.TermRDMAPTOWrap
	TermRDMAPProtInvalidate   = rdma.TermRDMAPProtInvalidate
	TermRDMAPProtUnspecified  = rdma.TermRDMAPProtUnspecified
	TermRDMAPInvalidVersion   = rdma.TermRDMAPInvalidVersion
	TermRDMAPUnexpectedOpcode = rdma.TermRDMAPUnexpectedOpcode
	TermRDMAPStreamCatastroph = rdma.TermRDMAPStreamCatastroph
	TermRDMAPGlobalCatastroph = rdma.TermRDMAPGlobalCatastroph
	TermRDMAPOpInvalidate     = rdma.TermRDMAPOpInvalidate
	TermRDMAPOpUnspecified    = rdma.TermRDMAPOpUnspecified
	TermDDPCatastrophic       = rdma.TermDDPCatastrophic
	TermDDPInvalidSTag        = rdma.TermDDPInvalidSTag
	TermDDPBaseBounds         = rdma.TermDDPBaseBounds
	TermDDPSTagNotAssoc       = rdma.TermDDPSTagNotAssoc
	TermDDPTOWrap             = rdma.TermDDPTOWrap
	TermDDPTaggedVersion      = rdma.TermDDPTaggedVersion
	TermDDPInvalidQN          = rdma.TermDDPInvalidQN
	TermDDPNoBuffer           = rdma.TermDDPNoBuffer
	TermDDPMSNRange           = rdma.TermDDPMSNRange
	TermDDPInvalidMO          = rdma.TermDDPInvalidMO
	TermDDPTooLong            = rdma.TermDDPTooLong
	TermDDPUntaggedVersion    = rdma.TermDDPUntaggedVersion
	TermLLPConnLost           = rdma.TermLLPConnLost
	TermLLPCRC                = rdma.TermLLPCRC
	TermLLPMarker             = rdma.TermLLPMarker
	TermLLPInvalidFrame       = rdma.TermLLPInvalidFrame
	TermLLPCatastrophic       = rdma.TermLLPCatastrophic
	TermLLPInsufficientIRD    = rdma.TermLLPInsufficientIRD
	TermLLPNoRTRModel         = rdma.TermLLPNoRTRModel
)

// TerminateError is a fatal error of a QP's stream reported with an RDMAP
// Terminate message: one this side sent because the peer broke the
// protocol (Sent), or one the peer sent. errors.Is(err, ErrTerminated)
// matches every TerminateError.
type TerminateError struct {
	Code TermCode
	// Sent is true if this side sent the Terminate, false if the peer did.
	Sent bool
	// SiwLayout is true if the received Terminate used Linux siw's non-RFC
	// encoding of the control field; Control holds the four bytes as
	// received.
	SiwLayout bool
	Control   [4]byte
	// Cause is the violation this side found (Sent), or nil.
	Cause error
}

// ErrTerminated matches every *TerminateError with errors.Is.
var ErrTerminated = errors.New("iwarp: stream terminated")

// Error describes the Terminate: who sent it, its code and, for one this
// side sent, the violation found (without repeating the code).
func (e *TerminateError) Error() string {
	dir := "peer sent Terminate"
	if e.Sent {
		dir = "sent Terminate"
	}
	s := fmt.Sprintf("iwarp: %s %v", dir, e.Code)
	if e.SiwLayout {
		s += fmt.Sprintf(" (siw layout, control % x)", e.Control)
	}
	if why := rdmap.TerminateCause(e.Code, e.Cause); why != "" {
		s += ": " + strings.TrimPrefix(why, "iwarp: ")
	}
	return s
}

// Is reports whether target is ErrTerminated.
func (e *TerminateError) Is(target error) bool { return target == ErrTerminated }

// Unwrap returns the cause.
func (e *TerminateError) Unwrap() error { return e.Cause }

// The local errors of the API. Each call's documentation says which it
// returns; errors.Is finds them in what the calls return, wrapped with the
// details.
var (
	// ErrClosed: a call on a closed Device, CQ, QP or Listener. An error
	// of a QP closed locally also matches ErrQPClosed.
	ErrClosed = errors.New("iwarp: closed")
	// ErrInvalidConfig: a configuration field out of range, or a QP that
	// is not idle given to a connection setup.
	ErrInvalidConfig = errors.New("iwarp: invalid configuration")
	// ErrInvalidWR: a work request that cannot be posted: an unknown
	// opcode or flag combination (rdma.ValidFlags), an SGE whose STag is
	// not the current one of a region of the QP's PD or that does not lie
	// in it, too many SGEs, an Inline payload too long, etc.
	ErrInvalidWR = errors.New("iwarp: invalid work request")
	// ErrQueueFull: the work queue holds as many work requests as its
	// depth (or an unsignaled WR would take the last free slot).
	ErrQueueFull = errors.New("iwarp: work queue full")
	// ErrNotConnected: work posted to a QP that never connected.
	ErrNotConnected = errors.New("iwarp: queue pair not connected")
	// ErrNotSupportedByPeer: the operation needs an RDMAP extension (RFC
	// 7306, the V2 draft) that the peer did not agree to in the MPA
	// startup (or was not declared to support with
	// ConnOptions.PeerExtensions); nothing was sent.
	ErrNotSupportedByPeer = errors.New("iwarp: operation not supported by the peer")
	// ErrCQCapacity: the CQ cannot hold the completions of another queue
	// (each queue attached to a CQ reserves its depth in it).
	ErrCQCapacity = errors.New("iwarp: completion queue capacity exhausted")
	// ErrInvalidBuffer: a buffer that cannot be registered, or a region
	// that cannot be re-keyed.
	ErrInvalidBuffer = errors.New("iwarp: invalid buffer")
	// ErrRange: an offset and length outside a region or a RemoteBuffer.
	ErrRange = rdma.ErrRange
	// ErrNotAtomicWord: a local atomic accessor was given an offset that
	// is not 8-byte aligned or not inside the region, or a region whose
	// buffer is not 8-byte aligned.
	ErrNotAtomicWord = errors.New("iwarp: not an aligned 64-bit word of the region")
	// ErrShed: the error of ConnRequest.Accept and Reject for a connection
	// whose startup the Listener gave up to admit a newer one (see
	// ListenConfig.MaxPending); its TCP connection is closed.
	ErrShed = errors.New("iwarp: connection setup given up: the listener had too many connections in startup")
	// ErrListenerFailed: the error of Accept once the net.Listener under
	// the Listener was closed by someone else (NewListener's ln), every
	// connection it had accepted before has either queued its request,
	// which Accept handed out, or failed its startup; it wraps the
	// net.Listener's error. Every later Accept fails the same way. Close
	// the Listener.
	ErrListenerFailed = errors.New("iwarp: the listener stopped accepting connections")
	// ErrMWType: a memory window of the wrong type for the call or work
	// request: AllocMW with a type other than WindowType1 and WindowType2,
	// MW.Bind on a type 2 window, an OpBindWindow WR naming a type 1
	// window.
	ErrMWType = errors.New("iwarp: wrong memory window type for the operation")
	// ErrMWBound: an OpBindWindow WR named a type 2 window that is still
	// bound: invalidate it (OpLocalInvalidate) before binding it again.
	ErrMWBound = errors.New("iwarp: type 2 memory window still bound")
	// ErrMWAccess: a memory window bind whose rights cannot be granted:
	// rights other than remote read, write, atomic (and remote invalidate
	// for type 2), a region registered without AccessMWBind, remote write
	// or atomic rights on a region without AccessLocalWrite, atomic rights
	// on a range that is not 8-byte aligned.
	ErrMWAccess = errors.New("iwarp: memory window rights cannot be granted")
	// ErrMWPD: a memory window bound to a region of another protection
	// domain, or by a QP of another protection domain.
	ErrMWPD = errors.New("iwarp: memory window in another protection domain")
	// ErrMWRegion: a memory window bound to a region that is deregistered
	// or invalid (or, for an OpBindWindow WR, invalidated, re-keyed or
	// deregistered since the WR was posted).
	ErrMWRegion = errors.New("iwarp: region cannot take a memory window now")
	// ErrMWDeallocated: a call on a deallocated memory window.
	ErrMWDeallocated = errors.New("iwarp: memory window deallocated")
	// ErrMWSTag: an OpBindWindow WR whose Window was not the window's
	// current STag when it executed (the window was bound again, or
	// deallocated, since the WR was posted).
	ErrMWSTag = errors.New("iwarp: not the memory window's current STag")
)

// The errors of a connection's end, as QP.Err, a flushed completion's Err
// and the calls on a QP that left RTS report them.
var (
	// ErrPeerDisconnected: the peer closed the connection without a
	// Terminate.
	ErrPeerDisconnected = rdmap.ErrPeerDisconnected
	// ErrDisconnected: the connection was closed in order.
	ErrDisconnected = rdmap.ErrDisconnected
	// ErrQPClosed: the QP was closed locally (such errors also match
	// ErrClosed).
	ErrQPClosed = rdmap.ErrLocallyClosed
	// ErrLocalProtection: a work request's local buffer was invalidated,
	// deregistered or re-keyed before the work request used it (the
	// error of a StatusLocalProtection completion).
	ErrLocalProtection = rdmap.ErrLocalProtection
)

// wrapEngineError converts the engine's errors to the API's: a Terminate
// into *TerminateError, any other error into an apiError (nil stays nil).
func wrapEngineError(err error) error {
	var te *rdmap.TerminateError
	if errors.As(err, &te) {
		return &TerminateError{
			Code: te.Code, Sent: te.Sent, Cause: te.Cause,
			SiwLayout: te.Layout == wire.LayoutSiw, Control: te.Control,
		}
	}
	if errors.Is(err, rdmap.ErrLocallyClosed) {
		return wrapAs(ErrClosed, err)
	}
	if errors.Is(err, rdmap.ErrBindWindow) {
		return mwError(err) // a failed OpBindWindow WR: its sentinel
	}
	return wrapAs(nil, err)
}

// apiError is the error of a layer below the API (the engine, MPA, the
// memory table) as the API returns it: its message is that layer's, which
// says more than the sentinel's, prefixed once with "iwarp: "; errors.Is
// and errors.As find both the API's sentinel kind (when not nil) and the
// layer's error.
type apiError struct {
	kind error
	err  error
}

// Error returns "iwarp: " and the layer's message.
func (e *apiError) Error() string { return "iwarp: " + detail(e.err) }

// Unwrap returns the sentinel and the layer's error.
func (e *apiError) Unwrap() []error {
	if e.kind == nil {
		return []error{e.err}
	}
	return []error{e.kind, e.err}
}

// wrapAs returns err, a lower layer's error, as an error of the API of
// kind (one of its sentinels, or nil). nil stays nil, and a context's own
// error is returned as it is.
func wrapAs(kind, err error) error {
	if err == nil || err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	return &apiError{kind: kind, err: err}
}

// detail is err's message without the "iwarp: " prefix, for a message that
// includes it.
func detail(err error) string { return strings.TrimPrefix(err.Error(), "iwarp: ") }
