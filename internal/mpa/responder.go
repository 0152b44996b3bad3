package mpa

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/goiwarp/iwarp/internal/wire"
)

// Limits bound what a Responder accepts while it reads a Request.
type Limits struct {
	// MaxPrivateData limits the Request's private data (0 means
	// MaxPrivateData, 512); a larger PD_Length is closed on.
	MaxPrivateData int
	// Timeout bounds the wait for the Request when ctx has no earlier
	// deadline (0 means DefaultResponderTimeout).
	Timeout time.Duration
	// Deadline, if not zero, bounds the whole Responder startup in place
	// of Timeout: the wait for the Request, and then Accept's exchange
	// (the RTR included) and Reject, which end at the earliest of it and
	// their own bounds. A listener sets it to the moment it accepted the
	// TCP connection plus its startup timeout.
	Deadline time.Time
}

// Request is an MPA Request read by a Responder, waiting for the ULP's
// Accept or Reject. Its Frame's private data belongs to it.
type Request struct {
	// Frame is the Request as received.
	Frame    Frame
	nc       net.Conn
	done     bool
	deadline time.Time // Limits.Deadline, or zero
}

// Rev returns the Request's Rev (1 or 2).
func (r *Request) Rev() uint8 { return r.Frame.Rev }

// IRDORD returns the Request's RFC 6581 block, if it has one.
func (r *Request) IRDORD() (IRDORD, bool) { return r.Frame.IRDORD() }

// Extensions returns the extension set the Initiator advertised.
func (r *Request) Extensions() Ext { return r.Frame.Flags.Ext().Normalize() }

// PrivateData returns the Initiator's ULP private data (after the block).
func (r *Request) PrivateData() []byte { return r.Frame.ULPData() }

// errRequestUsed is returned by a second Accept or Reject.
var errRequestUsed = errors.New("connection request already accepted or rejected")

// ReadRequest runs the first half of the Responder's startup on nc, a
// freshly accepted TCP connection: it reads exactly one MPA Request,
// bounded by ctx and lim.Timeout or lim.Deadline (nil lim means the
// defaults), so that the ULP can inspect it before calling Accept or
// Reject.
//
// Garbage is closed on without a Reply (docs/spec/mpa.md "Which
// reaction"): a bad key (ErrBadKey, also for a Reply key), an unknown Rev
// (ErrUnknownRev), a PD_Length over 512 or the limit
// (ErrPrivateDataTooLong), a short block (ErrShortIRDORD), bytes pipelined
// behind the Request (ErrPipelined). A stall gives a *TimeoutError. On
// every error nc is closed.
func ReadRequest(ctx context.Context, nc net.Conn, lim *Limits) (*Request, error) {
	if lim == nil {
		lim = &Limits{}
	}
	d := lim.Deadline
	if d.IsZero() {
		timeout := lim.Timeout
		if timeout <= 0 {
			timeout = DefaultResponderTimeout
		}
		d = time.Now().Add(timeout)
	}
	s := beginUntil(ctx, nc, d)
	f, err := s.readFrame(stageRequest, lim.MaxPrivateData)
	if err != nil {
		return nil, s.fail(err)
	}
	if f.Reply {
		return nil, s.fail(ErrBadKey)
	}
	if pipelined(nc) {
		return nil, s.fail(ErrPipelined)
	}
	s.end()
	return &Request{Frame: f, nc: nc, deadline: lim.Deadline}, nil
}

// Accept completes the Responder's startup under cfg (nil means
// DefaultConfig()): it applies DecideResponder, sends the Reply with
// cfg.PrivateData, and returns the established *Conn. In peer-to-peer mode
// it first awaits the agreed RTR message, answering a Read RTR with a
// zero-length Read Response; otherwise the returned Conn holds back its
// first FPDU until the Initiator's first FPDU has arrived (RFC 5044
// §7.1.2).
//
// When the decision is a reject (markers refused, no usable RTR type) the
// Reply has R set and no private data, and the error says why. The first
// FPDU must be the agreed RTR (a zero-length message of that type; STags
// are not checked): anything else is answered with Terminate LLP 0x07
// (ErrBadRTR) or the code of the violation found. Bounded by ctx,
// cfg.Timeout and the Limits.Deadline the Request was read under; on every
// error after validating cfg the connection is closed. The wait for the
// RTR holds no receive buffer until the RTR's bytes arrive (on Linux).
func (r *Request) Accept(ctx context.Context, cfg *Config) (*Conn, error) {
	if r.done {
		return nil, errRequestUsed
	}
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if err := cfg.check(false); err != nil {
		return nil, err
	}
	if r.Frame.Enhanced() && len(cfg.PrivateData) > MaxPrivateData-IRDORDLen {
		return nil, errConfigPD
	}
	r.done = true
	s := beginUntil(ctx, r.nc, r.until(cfg.timeout(false)))
	s.maxULPDU = cfg.MaxULPDU
	if pipelined(r.nc) {
		return nil, s.fail(ErrPipelined)
	}
	d := DecideResponder(&r.Frame, cfg)
	switch d.Action {
	case ActionClose:
		return nil, s.fail(d.Err)
	case ActionReject:
		if err := s.write(appendFrameBlock(nil, d.Reply, &d.Block, nil)); err != nil {
			return nil, s.fail(err)
		}
		return nil, s.fail(fmt.Errorf("rejected the peer's MPA Request: %w", d.Err))
	}
	if err := s.write(appendFrameBlock(nil, d.Reply, &d.Block, cfg.PrivateData)); err != nil {
		return nil, s.fail(err)
	}
	p := &d.Params
	fc := newFPDUConn(s, p, !p.P2P && !cfg.NoResponderHold)
	if p.P2P {
		u, err := s.awaitFPDU(fc, p, stageRTR, func(u *wire.ULPDU) error { return checkRTR(u, p.RTR) })
		if err != nil {
			return nil, err
		}
		if p.RTR == RTRRead {
			var buf [wire.TaggedHdrLen]byte
			if err := fc.Writer().WriteFPDU(appendRTRResponse(buf[:0], &u.ReadRequest, rdmapVersion(p))); err != nil {
				return nil, s.fail(s.ioErr(stageSend, err))
			}
		}
	}
	s.end()
	return &Conn{fc: fc, params: *p, peerPD: r.Frame.ULPData()}, nil
}

// Reject refuses the Request (RFC 5044 §7.1.2): it sends a Reply with R=1,
// the Request's Rev, and privateData (after a zero IRD/ORD block when the
// Request was enhanced), then closes the connection. The Initiator gets a
// *RejectError with privateData. The write is bounded by
// DefaultResponderTimeout and the Limits.Deadline the Request was read
// under.
func (r *Request) Reject(privateData []byte) error {
	if r.done {
		return errRequestUsed
	}
	room := MaxPrivateData
	if r.Frame.Enhanced() {
		room -= IRDORDLen
	}
	if len(privateData) > room {
		return errConfigPD
	}
	r.done = true
	hdr := Frame{Reply: true, Flags: FlagReject, Rev: r.Frame.Rev}
	if r.Frame.Enhanced() {
		hdr.Flags |= FlagEnhanced
	}
	s := beginUntil(context.Background(), r.nc, r.until(DefaultResponderTimeout))
	if err := s.write(appendFrameBlock(nil, hdr, &IRDORD{}, privateData)); err != nil {
		return s.fail(err)
	}
	return s.fail(nil)
}

// until returns the deadline of a step that may take timeout from now: the
// earlier of that and the Request's own deadline.
func (r *Request) until(timeout time.Duration) time.Time {
	d := time.Now().Add(timeout)
	if !r.deadline.IsZero() && r.deadline.Before(d) {
		return r.deadline
	}
	return d
}
