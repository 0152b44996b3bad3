package verbs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/poll"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// Errors of the QP API beyond the Core's (internal/rdmap).
var (
	// ErrNotConnected: send work was posted before Start.
	ErrNotConnected = errors.New("queue pair is not connected")
	// ErrPeerStalled: the peer made no progress within the operation
	// timeout while this side waited for it.
	ErrPeerStalled = errors.New("peer stalled: no progress within the operation timeout")
	// ErrDisconnectTimeout: with no operation timeout, an orderly
	// Disconnect did not end (the peer did not take what was sent, or did
	// not close its side) within the drain timeout.
	ErrDisconnectTimeout = errors.New("orderly disconnect not finished within the drain timeout")
	// errIncomplete: New was given a configuration it cannot run.
	errIncomplete = errors.New("incomplete QP configuration")
)

// defaultDrainTimeout bounds the drain after a Terminate when
// Config.DrainTimeout is 0.
const defaultDrainTimeout = 2 * time.Second

// Config is the shape of a QP.
type Config struct {
	Table  *mem.Table
	PD     uint32
	SendCQ *CQ
	RecvCQ *CQ
	// SRQ, if set, is the shared receive queue the QP takes its receives
	// from (RQDepth is then not used).
	SRQ *SRQ

	SQDepth   int // send work requests outstanding at once
	RQDepth   int // receive work requests posted at once
	MaxSGE    int // SGEs per work request
	MaxInline int // bytes of inline data per work request

	// OpTimeout bounds how long the QP waits for the peer to make
	// progress (read what is sent, send what it owes, close after
	// Disconnect) before it fails with ErrPeerStalled; 0 or less: none.
	OpTimeout time.Duration
	// DrainTimeout bounds how long input is read and discarded after a
	// Terminate, before the connection is closed, and, when OpTimeout is
	// 0 or less, how long an orderly Disconnect may take; 0 means 2 s.
	DrainTimeout time.Duration
	// OnDone, if set, is called once the QP has been torn down and every
	// work request flushed (the asynchronous event "QP fatal /
	// disconnected"), on whatever goroutine finished the teardown. It
	// must not block.
	OnDone func(*QP)
}

// Setup is what the connection's startup negotiated, for Start.
type Setup struct {
	// Framing is the MPA framing in full operation; RxOff and TxOff are
	// the stream offsets where full operation begins (markers are placed
	// relative to them, RFC 5044 §4.3).
	Framing      fpdu.Options
	RxOff, TxOff uint64
	// Params are the negotiated RDMAP parameters; a MULPDU of 0 is
	// derived from the connection's effective MSS.
	Params rdmap.Params
	// Pending are octets of the full-operation stream that the startup
	// already read from the connection; the QP takes them first.
	Pending []byte
}

// QP is one queue pair: an rdmap.Core run over one connection (see the
// package documentation for who owns what).
type QP struct {
	// Set by New, read-only after.
	dev *Device
	cfg Config
	num uint32 // the QP's number, stamped on its completions
	// User is the owner's handle for this QP; the shell does not use it.
	User any

	// mu is the Core's lock: it guards everything below it down to the
	// tokens (and rc, written with core). Only bounded work happens under
	// it: no system call, no wait; a CQ's waiters are woken after it is
	// released (act), a Waiter's by a send into its buffered channel.
	mu   sync.Mutex
	core *rdmap.Core // nil until Start
	// rq is the QP's own receive queue (nil with an SRQ), made by New so
	// that receives can be posted before Start, and handed to the Core as
	// its own (Config.OwnRecv): the Core flushes it, in order.
	rq *rdmap.RecvRing
	nc net.Conn // set by Start
	// sqTail mirrors the Core's send-queue tail: the slot of the next
	// WR posted (rdmap.Completion.Slot).
	sqTail uint64
	// waiters[slot % SQDepth] receives the completion of a WR posted
	// with PostWait instead of the send CQ (made at the first); wfree are
	// idle Waiters for Do.
	waiters []*Waiter
	wfree   []*Waiter
	comps   []rdmap.Completion // Poll's scratch
	// rxOut and txOut mirror the Core's "buffer handed out": a token
	// holder is between RxBuf and RxDone, or TxBufs and TxDone. The flush
	// is complete only when both are false.
	rxOut, txOut bool
	// rxIOV is the receive token holder's scratch for Core.RxBufs.
	rxIOV [][]byte
	rxVec iovScratch // rxWaiting's iovec scratch
	// readerWaiting: a goroutine waiting for a completion holds the
	// receive token and reads the socket itself (waitReading); a
	// completion handed over by anyone else interrupts its park.
	readerWaiting atomic.Bool
	// rdMu orders readerWaiting's changes with the read deadline the
	// interrupts set: the deadline is in the past only while it is true.
	rdMu   sync.Mutex
	rdPast bool // the read deadline is in the past (rdMu)
	// rdCtx, rdStop: the context registration kept for the next wait
	// (rdMu); rdClosed: the teardown dropped it for good.
	rdCtx    context.Context
	rdStop   func() bool
	rdClosed bool
	// The reading waiter's state, owned by the receive token's holder
	// while it waits: what it waits for (rdWaiter or rdCQ), the acts its
	// callback (rdFn) decided; interruptFn is interruptReader, bound once.
	rdWaiter    *Waiter
	rdCQ        *CQ
	rdActs      acts
	rdDisarmed  bool // it disarmed the socket before parking: arm on release
	rdFn        func(uintptr) bool
	interruptFn func()
	// hold: the MPA Responder rule (RFC 5044 §7.1.2): nothing is sent
	// before the peer's first octet arrived (the Core holds its output
	// too; the shell's flag keeps the transmit path idle and lets the
	// operation timeout count held work as a wait on the peer).
	hold       bool
	halfClosed bool  // shutdown(SHUT_WR) decided
	connClosed bool  // closing the connection decided
	finished   bool  // done closed: torn down, every WR flushed
	idleErr    error // why a QP that never started left IDLE
	timer      opTimer
	drain      *time.Timer // the drain after a Terminate
	// mss and mssRead: the MULPDU following the connection's MSS (mss.go).
	mss     mssFollow
	mssRead mssRead

	// The tokens: taken by compare-and-swap, never waited for.
	rxTok, txTok atomic.Bool
	// rxStop: the Core wants no more input (set by the rx token holder).
	rxStop atomic.Bool
	// rxMissed: a Ready found the receive token taken. The one-shot arm
	// it came through is spent, so the holder must arm again when it
	// releases the token (rxRelease swaps it after giving the token back).
	rxMissed atomic.Bool
	// hp is the poller registration (nil: no poller, or not yet).
	hp atomic.Pointer[poll.Handle]
	// rc is the connection's RawConn (nil for a connection without a
	// descriptor): the non-blocking system calls and the waits for the
	// socket of the paths without a poller Handle. Set by Start with core.
	rc syscall.RawConn

	// rxActs: what rxReadable's drives decided (the rx token holder's).
	rxActs acts

	// Owned by the tx token holder.
	tx    *txScratch // from txPool, while the token is held
	txRaw txRaw
	// wakeQueued: a Wake's drive is scheduled and has not started.
	wakeQueued atomic.Bool
	// rxBulkFn and txGoFn are rxBulk and txGoroutine bound once: a go
	// statement calling a method with its receiver would allocate a
	// closure each time.
	rxBulkFn, txGoFn func()

	done        chan struct{} // closed by finishLocked
	releaseOnce sync.Once
}

// New creates a QP in state IDLE. Its queues reserve their depth in the
// CQs, so that a CQ never overruns (docs/semantics.md rule 7).
func New(d *Device, cfg Config) (*QP, error) {
	if cfg.SRQ != nil {
		cfg.RQDepth = 0
	}
	if d == nil || cfg.SQDepth < 1 || (cfg.RQDepth < 1 && cfg.SRQ == nil) || cfg.MaxSGE < 1 || cfg.MaxInline < 0 ||
		cfg.Table == nil || cfg.SendCQ == nil || cfg.RecvCQ == nil {
		return nil, errIncomplete
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = defaultDrainTimeout
	}
	if err := cfg.SendCQ.reserve(cfg.SQDepth); err != nil {
		return nil, err
	}
	var err error
	if cfg.SRQ != nil {
		err = cfg.SRQ.reserveIn(cfg.RecvCQ)
	} else {
		err = cfg.RecvCQ.reserve(cfg.RQDepth)
	}
	if err != nil {
		cfg.SendCQ.unreserve(cfg.SQDepth)
		return nil, err
	}
	q := &QP{dev: d, cfg: cfg, num: d.qpns.Add(1), done: make(chan struct{})}
	q.rxBulkFn, q.txGoFn = q.rxBulk, q.txGoroutine
	q.bindReader()
	cfg.SendCQ.join(q)
	if cfg.SRQ == nil {
		cfg.RecvCQ.join(q)
	}
	if cfg.SRQ == nil {
		q.rq = rdmap.NewRecvRing(cfg.RQDepth, cfg.MaxSGE, cfg.Table, cfg.PD)
	}
	return q, nil
}

// Start moves the QP to RTS over an established connection whose startup
// negotiated s, and begins reading it.
func (q *QP) Start(nc net.Conn, s Setup) error {
	p := s.Params
	follow := p.MULPDU <= 0
	if follow {
		p.MULPDU = fpdu.MULPDU(fpdu.EMSS(nc), s.Framing.SendMarkers)
	}
	var rc syscall.RawConn
	if sc, ok := nc.(syscall.Conn); ok {
		rc, _ = sc.SyscallConn() // nil: the connection has no descriptor
	}
	q.mu.Lock()
	if q.core != nil || q.finished {
		q.mu.Unlock()
		return fmt.Errorf("%w (%v)", rdmap.ErrQPState, q.stateLocked())
	}
	var srq rdmap.RecvSource
	if q.cfg.SRQ != nil {
		srq = q.cfg.SRQ
	}
	core, err := rdmap.New(rdmap.Config{
		Table: q.cfg.Table, PD: q.cfg.PD, QPNum: q.num,
		SQDepth: q.cfg.SQDepth, RQDepth: q.cfg.RQDepth, MaxSGE: q.cfg.MaxSGE, MaxInline: q.cfg.MaxInline,
		Recv: srq, OwnRecv: q.rq, Params: p,
		Framing: s.Framing, RxOff: s.RxOff, TxOff: s.TxOff,
		Holder: (*leaseHolder)(q), Wake: q.wake,
	})
	if err != nil {
		q.mu.Unlock()
		return err
	}
	q.core, q.nc, q.rc = core, nc, rc
	q.mss = mssFollow{on: follow, markers: s.Framing.SendMarkers}
	q.hold = s.Framing.HoldSendUntilReceive
	if len(s.Pending) > 0 {
		q.hold = false
		q.feedLocked(s.Pending)
	}
	a := q.afterLocked()
	q.mu.Unlock()
	q.startReading()
	q.act(a)
	return nil
}

// startReading registers the connection with the Device's poller and arms
// it; where polling is unsupported or not wanted it starts the QP's
// receive goroutine: one that waits for the socket in the runtime's
// network poller (rxWaiting), or, for a connection without a descriptor,
// one that reads into a bounce buffer (rxBlocking).
func (q *QP) startReading() {
	var h *poll.Handle
	if sc, ok := q.nc.(syscall.Conn); ok && q.rc != nil {
		p, err := q.dev.pollerFor()
		if err != nil {
			q.failWith(err) // the Device was closed
			return
		}
		if p != nil {
			h, err = p.Register(sc, (*rxHandler)(q))
			if err != nil && !errors.Is(err, poll.ErrUnsupported) {
				q.failWith(err)
				return
			}
		}
	}
	q.mu.Lock()
	closed := q.connClosed
	if h != nil {
		// The receive token before the Handle is published: a waiter
		// or a Ready that sees the Handle finds the token taken until
		// rxRelease below gives it back and arms the socket.
		q.rxTok.Store(true)
		q.hp.Store(h)
	}
	q.mu.Unlock()
	switch {
	case h != nil && closed:
		_ = h.Close()
	case h != nil && !q.dev.track(q):
		q.failWith(ErrDeviceClosed)
	case h != nil:
		q.rxRelease(true) // arms the socket (registered disarmed)
	case closed:
	case q.rc != nil && rawIO:
		q.rxTok.Store(true) // the receive goroutine holds it for good
		go q.rxWaiting()
	default:
		q.rxTok.Store(true)
		go q.rxBlocking()
	}
}

// PostSend queues send work requests in order and transmits what it can
// at once (see rdmap.Core.PostSend for the validation). It stops at the
// first one that cannot be posted and returns how many were posted and
// why the next failed. It never blocks on the network.
func (q *QP) PostSend(wrs []rdmap.SendWR) (int, error) {
	q.mu.Lock()
	if q.core == nil {
		err := q.idleErrLocked()
		q.mu.Unlock()
		return 0, err
	}
	n, tx, err := q.postLocked(wrs)
	q.mu.Unlock()
	if tx {
		q.kickTx()
	}
	return n, err
}

// postLocked posts wrs to the Core and reports how many were posted and
// whether the caller should transmit. QP.mu is held.
func (q *QP) postLocked(wrs []rdmap.SendWR) (int, bool, error) {
	n, err := q.core.PostSend(wrs)
	q.sqTail += uint64(n)
	if n > 0 && q.hold {
		q.timersLocked() // held for the peer's first octet: the peer is waited on
	}
	return n, n > 0 && q.txWantedLocked(), err
}

// PostRecv posts receive work requests to the QP's own receive queue, in
// order (errors of rdmap.RecvRing.Post). Receives may be posted before the
// QP is connected; they are refused once it left RTS. A QP with a shared
// receive queue has none of its own (rdmap.ErrSharedRecv).
func (q *QP) PostRecv(wrs []rdmap.RecvWR) (int, error) {
	if q.rq == nil {
		return 0, rdmap.ErrSharedRecv
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if s := q.stateLocked(); s != rdma.StateIdle && s != rdma.StateRTS {
		return 0, q.stateErrLocked(s)
	}
	return q.rq.Post(wrs)
}

// idleErrLocked is why a QP without a Core refuses send work.
func (q *QP) idleErrLocked() error {
	if q.finished {
		return q.stateErrLocked(rdma.StateError)
	}
	return ErrNotConnected
}

// stateErrLocked is the error of a post refused in state s.
func (q *QP) stateErrLocked(s rdma.QPState) error {
	if err := q.errLocked(); err != nil {
		return fmt.Errorf("%w (%v): %w", rdmap.ErrQPState, s, err)
	}
	return fmt.Errorf("%w (%v)", rdmap.ErrQPState, s)
}

// State returns the QP's state.
func (q *QP) State() rdma.QPState {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stateLocked()
}

func (q *QP) stateLocked() rdma.QPState {
	switch {
	case q.core != nil:
		return q.core.State()
	case q.finished:
		return rdma.StateError
	}
	return rdma.StateIdle
}

// Err returns the error that took the QP out of RTS, or nil.
func (q *QP) Err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.errLocked()
}

func (q *QP) errLocked() error {
	if q.core != nil {
		return q.core.Err()
	}
	return q.idleErr
}

// Params returns the parameters in use (zero before Start).
func (q *QP) Params() rdmap.Params {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.core == nil {
		return rdmap.Params{}
	}
	return q.core.Params()
}

// IRDInUse returns how many of the peer's Read and atomic requests are
// accepted and not yet fully answered.
func (q *QP) IRDInUse() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.core == nil {
		return 0
	}
	return q.core.IRDInUse()
}

// ORDInUse returns how many of this side's Reads and atomics are
// outstanding.
func (q *QP) ORDInUse() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.core == nil {
		return 0
	}
	return q.core.ORDInUse()
}

// Stats returns a copy of the QP's counters.
func (q *QP) Stats() rdmap.Counters {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.core == nil {
		return rdmap.Counters{}
	}
	return *q.core.Stats()
}

// Done is closed when the QP has been torn down and every work request
// flushed.
func (q *QP) Done() <-chan struct{} { return q.done }

// Num returns the QP's number: unique among the Device's QPs, and the
// QPNum of its completions.
func (q *QP) Num() uint32 { return q.num }
