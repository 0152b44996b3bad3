package iwarp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/wire"
)

// TermLayer is the layer a Terminate error was found in (RFC 5040 §4.8).
type TermLayer uint8

// Terminate layers.
const (
	LayerRDMAP TermLayer = TermLayer(wire.LayerRDMAP)
	LayerDDP   TermLayer = TermLayer(wire.LayerDDP)
	LayerLLP   TermLayer = TermLayer(wire.LayerLLP)
)

// String returns "RDMAP", "DDP" or "LLP".
func (l TermLayer) String() string { return wire.Layer(l).String() }

// TermCode identifies a Terminate error: layer, error type and error code
// (RFC 5040 §4.8, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §9).
type TermCode struct {
	Layer TermLayer
	Type  uint8
	Code  uint8
}

// String formats the code as "LAYER/TYPE/0xCODE (meaning)".
func (c TermCode) String() string { return c.wire().String() }

// Name returns the meaning of the code as the RFC tables word it.
func (c TermCode) Name() string { return c.wire().Name() }

func (c TermCode) wire() wire.TermCode {
	return wire.TermCode{Layer: wire.Layer(c.Layer), Type: wire.ErrorType(c.Type), Code: c.Code}
}

func termCode(c wire.TermCode) TermCode {
	return TermCode{Layer: TermLayer(c.Layer), Type: uint8(c.Type), Code: c.Code}
}

// The Terminate codes of the specifications.
var (
	TermRDMAPCatastrophic     = termCode(wire.TermRDMAPCatastrophic)
	TermRDMAPInvalidSTag      = termCode(wire.TermRDMAPInvalidSTag)
	TermRDMAPBaseBounds       = termCode(wire.TermRDMAPBaseBounds)
	TermRDMAPAccessRights     = termCode(wire.TermRDMAPAccessRights)
	TermRDMAPSTagNotAssoc     = termCode(wire.TermRDMAPSTagNotAssoc)
	TermRDMAPTOWrap           = termCode(wire.TermRDMAPTOWrap)
	TermRDMAPProtInvalidate   = termCode(wire.TermRDMAPProtInvalidate)
	TermRDMAPProtUnspecified  = termCode(wire.TermRDMAPProtUnspecified)
	TermRDMAPInvalidVersion   = termCode(wire.TermRDMAPInvalidVersion)
	TermRDMAPUnexpectedOpcode = termCode(wire.TermRDMAPUnexpectedOpcode)
	TermRDMAPStreamCatastroph = termCode(wire.TermRDMAPStreamCatastroph)
	TermRDMAPGlobalCatastroph = termCode(wire.TermRDMAPGlobalCatastroph)
	TermRDMAPOpInvalidate     = termCode(wire.TermRDMAPOpInvalidate)
	TermRDMAPOpUnspecified    = termCode(wire.TermRDMAPOpUnspecified)
	TermDDPCatastrophic       = termCode(wire.TermDDPCatastrophic)
	TermDDPInvalidSTag        = termCode(wire.TermDDPInvalidSTag)
	TermDDPBaseBounds         = termCode(wire.TermDDPBaseBounds)
	TermDDPSTagNotAssoc       = termCode(wire.TermDDPSTagNotAssoc)
	TermDDPTOWrap             = termCode(wire.TermDDPTOWrap)
	TermDDPTaggedVersion      = termCode(wire.TermDDPTaggedVersion)
	TermDDPInvalidQN          = termCode(wire.TermDDPInvalidQN)
	TermDDPNoBuffer           = termCode(wire.TermDDPNoBuffer)
	TermDDPMSNRange           = termCode(wire.TermDDPMSNRange)
	TermDDPInvalidMO          = termCode(wire.TermDDPInvalidMO)
	TermDDPTooLong            = termCode(wire.TermDDPTooLong)
	TermDDPUntaggedVersion    = termCode(wire.TermDDPUntaggedVersion)
	TermLLPConnLost           = termCode(wire.TermLLPConnLost)
	TermLLPCRC                = termCode(wire.TermLLPCRC)
	TermLLPMarker             = termCode(wire.TermLLPMarker)
	TermLLPInvalidFrame       = termCode(wire.TermLLPInvalidFrame)
	TermLLPCatastrophic       = termCode(wire.TermLLPCatastrophic)
	TermLLPInsufficientIRD    = termCode(wire.TermLLPInsufficientIRD)
	TermLLPNoRTRModel         = termCode(wire.TermLLPNoRTRModel)
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
	if why := rdmap.TerminateCause(e.Code.wire(), e.Cause); why != "" {
		s += ": " + strings.TrimPrefix(why, "iwarp: ")
	}
	return s
}

// Is reports whether target is ErrTerminated.
func (e *TerminateError) Is(target error) bool { return target == ErrTerminated }

// Unwrap returns the cause.
func (e *TerminateError) Unwrap() error { return e.Cause }

// Errors of connections and queue pairs.
var (
	// ErrPeerDisconnected: the peer closed the connection without a
	// Terminate.
	ErrPeerDisconnected = rdmap.ErrPeerDisconnected
	// ErrDisconnected: the connection was closed in order.
	ErrDisconnected = rdmap.ErrDisconnected
	// ErrQPClosed: the QP was closed locally.
	ErrQPClosed = rdmap.ErrLocallyClosed
)

// wrapEngineError converts the engine's errors to the API's: a Terminate
// into *TerminateError, any other error into an apiError (nil stays nil).
func wrapEngineError(err error) error {
	var te *rdmap.TerminateError
	if errors.As(err, &te) {
		return &TerminateError{
			Code: termCode(te.Code), Sent: te.Sent, Cause: te.Cause,
			SiwLayout: te.Layout == wire.LayoutSiw, Control: te.Control,
		}
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
