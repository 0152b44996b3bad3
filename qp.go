package iwarp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/verbs"
	"github.com/goiwarp/iwarp/rdma"
)

// QPConfig is the shape of a queue pair. Zero fields take the defaults.
type QPConfig struct {
	// SendCQ and RecvCQ receive the completions of the send and receive
	// queues (they may be the same CQ). Required.
	SendCQ, RecvCQ *CQ
	// SRQ, if set, is the shared receive queue the QP's receives come
	// from; it then has no receive queue of its own (RecvQueueDepth is not
	// used and PostRecv fails).
	SRQ *SRQ
	// SendQueueDepth and RecvQueueDepth bound the work requests
	// outstanding at once (default 64 each); each reserves that many
	// entries in its CQ.
	SendQueueDepth, RecvQueueDepth int
	// MaxSGE is the scatter/gather elements per work request (default 4).
	MaxSGE int
	// MaxInline is the inline payload per send work request (default 64).
	MaxInline int
	// IRD and ORD are the RDMA Reads this side accepts outstanding from
	// the peer and wants outstanding towards it (default 16; RFC 6581
	// negotiates them with the peer).
	IRD, ORD int
	// OpTimeout bounds how long the QP waits for a peer that stops reading
	// what it is sent before failing the connection (default 30 s; <0
	// means no bound).
	OpTimeout time.Duration
}

// QPState is a queue pair's state: StateIdle (created, not connected),
// StateRTS (connected), StateClosing (orderly disconnect under way),
// StateTerminate (a Terminate was sent or received), StateError (torn down,
// work flushed).
type QPState = rdma.QPState

// QP states.
const (
	StateIdle      = rdma.StateIdle
	StateRTS       = rdma.StateRTS
	StateClosing   = rdma.StateClosing
	StateTerminate = rdma.StateTerminate
	StateError     = rdma.StateError
)

// QP is a queue pair: the endpoint of one RDMA connection. Post work to it
// with PostSend and PostRecv; completions arrive on its CQs.
type QP struct {
	pd  *PD
	cfg QPConfig
	e   *verbs.QP

	amu   sync.Mutex // guards attrs
	attrs QPAttributes

	wmu     sync.Mutex // guards waiters
	waiters []*verbs.Waiter

	// gone counts the QP out of its Device once (torn down or closed).
	gone sync.Once

	// listener is the Listener whose open-connection count includes this
	// QP, until its teardown releases it (set once by ConnRequest.Accept,
	// taken once by releaseListener).
	listener atomic.Pointer[Listener]
	// connecting: a Connect or an Accept has claimed the QP (claim); only
	// one may run its startup, and one that fails before starting the QP
	// gives the claim back (the QP stays idle and reusable).
	connecting atomic.Bool
}

// releaseListener takes the QP out of its Listener's connection count.
func (qp *QP) releaseListener() {
	if l := qp.listener.Swap(nil); l != nil {
		l.open.Add(-1)
	}
}

// NewQP creates a queue pair in state StateIdle. Post receives before
// connecting if the peer may Send at once.
func (pd *PD) NewQP(cfg *QPConfig) (*QP, error) {
	if cfg == nil || cfg.SendCQ == nil || cfg.RecvCQ == nil {
		return nil, fmt.Errorf("%w: SendCQ and RecvCQ are required", ErrInvalidConfig)
	}
	c := *cfg
	def := func(v *int, d, maxv int, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 0 || *v > maxv {
			return fmt.Errorf("%w: %s %d out of range 0..%d", ErrInvalidConfig, name, *v, maxv)
		}
		return nil
	}
	for _, f := range []struct {
		v       *int
		d, maxv int
		name    string
	}{
		{&c.SendQueueDepth, 64, maxQueueDepth, "SendQueueDepth"},
		{&c.RecvQueueDepth, 64, maxQueueDepth, "RecvQueueDepth"},
		{&c.MaxSGE, 4, maxSGE, "MaxSGE"},
		{&c.MaxInline, 64, maxInline, "MaxInline"},
		{&c.IRD, 16, maxIRDORD, "IRD"},
		{&c.ORD, 16, maxIRDORD, "ORD"},
	} {
		if err := def(f.v, f.d, f.maxv, f.name); err != nil {
			return nil, err
		}
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = 30 * time.Second
	}
	opTimeout := c.OpTimeout
	if opTimeout < 0 {
		opTimeout = 0
	}
	var esrq *verbs.SRQ
	if c.SRQ != nil {
		if c.SRQ.pd != pd {
			return nil, fmt.Errorf("%w: the SRQ belongs to another PD", ErrInvalidConfig)
		}
		esrq = c.SRQ.e
	}
	e, err := verbs.New(pd.dev.vd, verbs.Config{
		SRQ:   esrq,
		Table: pd.dev.table, PD: pd.id, SendCQ: c.SendCQ.e, RecvCQ: c.RecvCQ.e,
		SQDepth: c.SendQueueDepth, RQDepth: c.RecvQueueDepth, MaxSGE: c.MaxSGE, MaxInline: c.MaxInline,
		OpTimeout: opTimeout, OnDone: pd.dev.qpDone,
	})
	if err != nil {
		if errors.Is(err, verbs.ErrCQFull) {
			return nil, wrapAs(ErrCQCapacity, err)
		}
		return nil, wrapAs(ErrInvalidConfig, err)
	}
	qp := &QP{pd: pd, cfg: c, e: e}
	e.User = qp
	pd.dev.qpOpened()
	return qp, nil
}

// forget counts the QP out of its Device, once.
func (qp *QP) forget() {
	qp.gone.Do(func() {
		qp.pd.dev.stats.finished(qp.e)
		qp.pd.dev.qpClosed()
	})
}

// PD returns the QP's protection domain.
func (qp *QP) PD() *PD { return qp.pd }

// SendCQ returns the CQ the send queue completes to (for a QP made by Dial
// or Serve, the one made for it).
func (qp *QP) SendCQ() *CQ { return qp.cfg.SendCQ }

// RecvCQ returns the CQ the receive queue completes to (for a QP made by
// Dial or Serve, the one made for it): a Handle polls its receives there.
func (qp *QP) RecvCQ() *CQ { return qp.cfg.RecvCQ }

// State returns the QP's state.
func (qp *QP) State() QPState { return qp.e.State() }

// Err returns why the QP left StateRTS (a *TerminateError, ErrDisconnected,
// ErrPeerDisconnected, a connection error...), or nil.
func (qp *QP) Err() error {
	if err := qp.e.Err(); err != nil {
		return wrapEngineError(err)
	}
	return nil
}

// Done is closed when the QP has been torn down and every work request
// completed or flushed.
func (qp *QP) Done() <-chan struct{} { return qp.e.Done() }

// QPAttributes describe a connected QP: what its connection negotiated.
type QPAttributes struct {
	MPARevision int
	CRC         bool // MPA CRC in use
	// SendMarkers and RecvMarkers: MPA markers in each direction.
	SendMarkers, RecvMarkers bool
	// P2P: RFC 6581 peer-to-peer mode, with the RTR message type used.
	P2P bool
	RTR string
	// IRD and ORD are the negotiated Read limits of this side.
	IRD, ORD int
	// MULPDU is the largest ULPDU this side sends now: derived from the
	// connection's TCP MSS (RFC 5044 §4.1) when it connected, and raised
	// when the MSS grows (on loopback from 32,741 to 65,483 once data flows).
	MULPDU int
	// RFC7306 and V2: the RDMAP extensions both sides agreed on.
	RFC7306, V2 bool
	// PeerPrivateData is the private data of the peer's MPA frame.
	PeerPrivateData []byte
	// LocalAddr and PeerAddr are the connection's addresses.
	LocalAddr, PeerAddr string
}

// Attributes returns what the connection negotiated.
func (qp *QP) Attributes() QPAttributes {
	qp.amu.Lock()
	a := qp.attrs
	qp.amu.Unlock()
	if m := qp.e.MULPDU(); m > 0 {
		a.MULPDU = m // it grows with the connection's MSS
	}
	return a
}

// PostSend queues send work requests, in order. It returns at once; the
// work is transmitted by the QP, and each WR completes on the send CQ (if
// Signaled, or on failure). Each SGE's STag must be the current STag of a
// region of the QP's PD that covers its bytes (MR.SGE makes one). On
// error, the WRs before the failing one were posted and the rest were not.
func (qp *QP) PostSend(wrs ...SendWR) error {
	_, err := qp.e.PostSend(wrs)
	return postError(err)
}

// Num returns the QP's number: unique among its Device's QPs, and the
// QPNum of its completions.
func (qp *QP) Num() uint32 { return qp.e.Num() }

// postError converts an error of a post into the API's.
func postError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rdmap.ErrSQFull), errors.Is(err, rdmap.ErrRQFull), errors.Is(err, rdmap.ErrSQNeedsSignaled):
		return wrapAs(ErrQueueFull, err)
	case errors.Is(err, verbs.ErrNotConnected):
		return wrapAs(ErrNotConnected, err)
	case errors.Is(err, rdmap.ErrQPState), errors.Is(err, rdmap.ErrLocallyClosed):
		return wrapEngineError(err)
	case errors.Is(err, rdmap.ErrNotSupportedByPeer):
		return wrapAs(ErrNotSupportedByPeer, err)
	}
	return wrapAs(ErrInvalidWR, err) // ErrSharedRecv and the WR checks
}

// PostRecv posts receive work requests, in order. Receives may be posted
// before the QP is connected. On iWARP a Send that finds no posted receive
// is fatal to the connection (there is no retry): keep receives posted
// ahead of the peer's Sends (docs/semantics.md).
func (qp *QP) PostRecv(wrs ...RecvWR) error {
	_, err := qp.e.PostRecv(wrs)
	return postError(err)
}

// start hands an established MPA connection to the engine.
// claim reserves the idle QP for one connection setup; it fails if the QP
// is not idle or another setup holds it.
func (qp *QP) claim() error {
	if s := qp.State(); s != StateIdle {
		return fmt.Errorf("%w: QP is %v", ErrInvalidConfig, s)
	}
	if !qp.connecting.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: another Connect or Accept is setting the QP up", ErrInvalidConfig)
	}
	return nil
}

// unclaim gives the claim back after a setup that failed before start.
func (qp *QP) unclaim() { qp.connecting.Store(false) }

func (qp *QP) start(c *mpa.Conn) error {
	p := c.Params()
	qp.amu.Lock()
	qp.attrs = QPAttributes{
		MPARevision: int(p.Rev), CRC: p.CRC, SendMarkers: p.SendMarkers, RecvMarkers: p.RecvMarkers,
		P2P: p.P2P, RTR: p.RTR.String(), IRD: int(p.IRD), ORD: int(p.ORD), MULPDU: c.MULPDU(),
		RFC7306: p.Extensions&mpa.ExtRFC7306 != 0, V2: p.Extensions&mpa.ExtV2 != 0,
		PeerPrivateData: append([]byte(nil), c.PeerPrivateData()...),
		LocalAddr:       c.FPDU().NetConn().LocalAddr().String(),
		PeerAddr:        c.FPDU().NetConn().RemoteAddr().String(),
	}
	h := c.Handover()
	qp.amu.Unlock()
	qp.pd.dev.log.log(slog.LevelDebug, "iwarp: queue pair connected", slog.String("peer", qp.attrs.PeerAddr),
		slog.Int("mpa_rev", int(p.Rev)), slog.Bool("crc", p.CRC), slog.Bool("rfc7306", qp.attrs.RFC7306), slog.Bool("v2", qp.attrs.V2))
	qp.pd.dev.stats.started(qp.e)
	return wrapEngineError(qp.e.Start(h.NetConn, verbs.Setup{
		Framing: h.Framing, RxOff: h.RxOff, TxOff: h.TxOff, Pending: h.Pending,
		Params: rdmap.Params{
			IRD: int(p.IRD), ORD: int(p.ORD), // MULPDU 0: derived from the MSS, and following it
			FirstSendMSN: p.SendMSN(0), FirstReadMSN: p.SendMSN(1),
			FirstPeerSendMSN: p.RecvMSN(0), FirstPeerReadMSN: p.RecvMSN(1),
			RFC7306: p.Extensions&mpa.ExtRFC7306 != 0,
			V2:      p.Extensions&mpa.ExtV2 != 0,
		},
	}))
}

// Disconnect closes the connection in order: no new work is accepted, the
// posted work is transmitted and completes, then the connection is closed;
// receives still posted complete as flushed. A peer that does not close its
// side within QPConfig.OpTimeout of our half-close fails the QP (Err says
// the peer stalled). If ctx ends first the QP is closed at once and ctx's
// error returned.
func (qp *QP) Disconnect(ctx context.Context) error { return wrapEngineError(qp.e.Disconnect(ctx)) }

// Close tears the QP down at once (no Terminate: the peer sees the
// connection close); outstanding work completes as flushed. It returns when
// that is done. Close is safe to call more than once.
func (qp *QP) Close() error {
	err := wrapEngineError(qp.e.Close())
	qp.releaseListener()
	qp.forget()
	return err
}
