package engine

import (
	"errors"
	"sync"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// State is a QP's state (docs/spec/rdmap.md §3, as in siw and verbs).
type State uint8

// QP states.
const (
	StateIdle      State = iota // created, not connected
	StateRTS                    // connected: ready to send
	StateClosing                // orderly shutdown: no new work, outstanding work drains
	StateTerminate              // a Terminate was sent or received
	StateError                  // torn down, every WR flushed
)

var stateNames = [...]string{"IDLE", "RTS", "CLOSING", "TERMINATE", "ERROR"}

// String returns the state's name.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "STATE?"
}

// Errors of the local QP API (never sent as Terminates).
var (
	ErrSQFull = errors.New("send queue full")
	// ErrSQNeedsSignaled: the send queue's last free slot is kept for a
	// signaled WR, whose polled completion frees the unsignaled ones.
	ErrSQNeedsSignaled = errors.New("the last free send-queue slot needs a signaled work request")
	ErrRQFull          = errors.New("receive queue full")
	ErrTooManySGE      = errors.New("too many scatter/gather elements")
	ErrBadSGE          = errors.New("scatter/gather element outside its region")
	ErrBadOp           = errors.New("unknown work request operation")
	ErrNotConnected    = errors.New("queue pair is not connected")
	ErrQPState         = errors.New("queue pair is not in a state that accepts work")
	ErrMessageSize     = errors.New("message larger than the maximum message size")
	ErrInlineTooLong   = errors.New("inline data longer than the QP's inline limit")
	ErrReadSinkSGE     = errors.New("an RDMA Read sink must be a single SGE")
	ErrAccess          = errors.New("a local buffer lacks the access the operation needs")
	ErrNoORD           = errors.New("RDMA Read or atomic with an ORD of 0: the peer accepts none")
	// ErrNotSupportedByPeer: the operation needs an RDMAP extension the
	// peer did not agree to; nothing was sent (extensions.md §3.1).
	ErrNotSupportedByPeer = errors.New("operation not supported by the peer (the RDMAP extension it needs was not agreed)")
	// ErrMisaligned: an atomic's remote TO or result buffer is not 8-byte
	// aligned.
	ErrMisaligned = errors.New("atomic target must be 8-byte aligned")
)

// minMULPDU is the smallest MULPDU the engine segments to: an untagged
// header and a few payload bytes.
const minMULPDU = wire.UntaggedHdrLen + 4

// MaxMessageSize is the largest message (Send, Write or Read) one work
// request may carry: 2^31 bytes, well inside RDMAP's 32-bit sizes.
const MaxMessageSize = 1 << 31

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

	// OpTimeout bounds how long the QP waits for the peer to make progress
	// (read what we send, send what it owes) before it fails; 0 means none.
	OpTimeout time.Duration
	// DrainTimeout bounds how long input is read and discarded after a
	// Terminate is sent, before the connection is closed.
	DrainTimeout time.Duration
	// DeviceCounters, if set, receive every count of the QP's own counters
	// too (the device's aggregate).
	DeviceCounters *Counters
	// OnDone, if set, is called once the QP has been torn down (on the
	// receive goroutine, after every WR was flushed): the asynchronous
	// event "QP fatal / disconnected". It must not block.
	OnDone func(*QP)
}

// Params are what connection setup negotiated, handed to Start.
type Params struct {
	IRD, ORD int // inbound / outbound Read (and atomic) limits
	MULPDU   int // largest ULPDU we send
	// FirstMSN are the first MSNs to use on QN 0 and QN 1 in each direction
	// (2 where a Send or Read RTR used MSN 1; else 1).
	FirstSendMSN, FirstReadMSN         uint32
	FirstPeerSendMSN, FirstPeerReadMSN uint32
	// RFC7306: the peer agreed to (or was declared to support) RFC 7306,
	// so this side may send its messages. Received RFC 7306 messages are
	// processed whatever this says (extensions.md §3.4).
	RFC7306 bool
	// V2: both sides agreed to the RDMAP Extensions V2 draft: every message
	// in both directions carries RDMAP version 2 (5-bit opcodes), and the
	// V2 messages (Send with Immediate, Read V2) may be sent.
	V2 bool
}

// QP is one queue pair: an RDMAP stream over one MPA connection.
//
// Concurrency: mu guards the queues (sq*, rq*, orq*, irq*), state and err.
// The goroutine holding the receive role (see rxrole.go: the receive
// goroutine, or a waiter that borrowed it) owns the rx fields and the fpdu
// Reader; the goroutine holding the transmit role (see tx.go) owns the tx*
// fields and the fpdu Writer.
type QP struct {
	cfg Config
	// User is the owner's handle for this QP, reported with completions.
	User any

	mu    sync.Mutex
	state State
	err   error // the first error: why the QP left RTS
	conn  *fpdu.Conn
	p     Params
	rv    uint8 // the RDMAP version of the stream: 1, or 2 once V2 is agreed (set by Start)

	// Send queue: a ring of cfg.SQDepth entries addressed by sequence
	// numbers. sqFree <= sqDone <= sqNext <= sqTail:
	// [sqFree, sqDone) completed but slots not yet freed (completion not
	// polled), [sqDone, sqNext) handed to the transmit path (Reads waiting
	// for their response), [sqNext, sqTail) not yet transmitted.
	sq                             []sqEntry
	sqSGE                          []SGE // cfg.MaxSGE per entry
	sqInline                       []byte
	sqFree, sqDone, sqNext, sqTail uint64
	// txSignaled counts the posted signaled WRs not yet completed whose
	// completion the transmit path pushes to the send CQ (not Reads or
	// atomics): while there are any, a waiter on that CQ does not borrow
	// the receive role (rxrole.go).
	txSignaled int

	// rq is the QP's own receive queue, or its SRQ's (srq set).
	rq  *recvQueue
	srq *SRQ

	// orq are this side's outstanding Reads, in order (at most ORD): their
	// send-queue sequence numbers.
	orq ring[uint64]
	// irq are the peer's Reads to answer, in order (at most IRD: one per
	// IRD credit in use); the first irqSent of them (0 or 1) is being
	// transmitted. A response leaves it when its last segment is handed
	// to the Writer, with its credit (responseWritten).
	irq     ring[irqEntry]
	irqSent int
	// irdInUse counts the peer's requests accepted and not yet answered
	// up to their last segment. It drops when that segment is handed to
	// the Writer, before the bytes reach the socket: the peer cannot free
	// its ORD credit, and send another request, earlier than that.
	irdInUse int

	tx    txState
	rx    rxState
	role  rxRole
	wd    watchdog
	stats Counters

	termDue *TerminateError // guarded by mu: a Terminate for the transmit role to send
	// termWanted (guarded by mu) stays true once a Terminate was decided,
	// after the transmit role took termDue: teardown then drains input so
	// that closing does not reset the connection under the Terminate.
	termWanted bool
	termSent   chan struct{} // closed once it was sent

	releaseOnce sync.Once
	idleClose   sync.Once // Close of a QP that was never started

	done chan struct{} // closed when the QP is fully torn down
}

type sqEntry struct {
	wr       SendWR // SGL points into sqSGE
	seq      uint64
	complete bool
	cqe      bool // a completion was reported for it
	released bool // its completion was consumed: the slot may be reused
	status   Status
	err      error
	inline   []byte // Inline: the payload, copied at post time
	size     uint64 // payload bytes (Read: bytes to read)
	read     uint64 // Read: response bytes placed
	original uint64 // atomic: the value found at the target
	// txSignaled: a signaled WR the transmit path completes (counted in
	// QP.txSignaled until it completes).
	txSignaled bool
}

// New creates a QP in state IDLE. Its queues reserve their depth in the CQs.
func New(cfg Config) (*QP, error) {
	if cfg.SRQ != nil {
		cfg.RQDepth = 0
	}
	if cfg.SQDepth < 1 || (cfg.RQDepth < 1 && cfg.SRQ == nil) || cfg.MaxSGE < 1 || cfg.Table == nil || cfg.SendCQ == nil || cfg.RecvCQ == nil {
		return nil, errors.New("incomplete QP configuration")
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 2 * time.Second
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
	qp := &QP{
		cfg:      cfg,
		sq:       make([]sqEntry, cfg.SQDepth),
		sqSGE:    make([]SGE, cfg.SQDepth*cfg.MaxSGE),
		sqInline: make([]byte, cfg.SQDepth*cfg.MaxInline),
		srq:      cfg.SRQ,
		done:     make(chan struct{}),
		termSent: make(chan struct{}),
	}
	if cfg.SRQ != nil {
		qp.rq = cfg.SRQ.q
	} else {
		qp.rq = newRecvQueue(cfg.RQDepth, cfg.MaxSGE)
	}
	qp.tx.init()
	qp.role.init()
	cfg.SendCQ.attach(qp)
	cfg.RecvCQ.attach(qp)
	return qp, nil
}

// State returns the QP's state.
func (qp *QP) State() State {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.state
}

// Err returns the error that took the QP out of RTS, or nil.
func (qp *QP) Err() error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.err
}

// Params returns the parameters the QP was started with.
func (qp *QP) Params() Params {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.p
}

// Done is closed when the QP has been torn down and every WR flushed.
func (qp *QP) Done() <-chan struct{} { return qp.done }

// Start moves the QP to RTS over an established MPA connection and starts
// its goroutines.
func (qp *QP) Start(c *fpdu.Conn, p Params) error {
	qp.mu.Lock()
	if qp.state != StateIdle || qp.conn != nil {
		qp.mu.Unlock()
		return ErrQPState
	}
	if p.FirstSendMSN == 0 {
		p.FirstSendMSN = 1
	}
	if p.FirstReadMSN == 0 {
		p.FirstReadMSN = 1
	}
	if p.FirstPeerSendMSN == 0 {
		p.FirstPeerSendMSN = 1
	}
	if p.FirstPeerReadMSN == 0 {
		p.FirstPeerReadMSN = 1
	}
	switch {
	case p.MULPDU <= 0:
		p.MULPDU = fpdu.MULPDU(fpdu.EMSS(c.NetConn()), c.Options().SendMarkers)
	case p.MULPDU < minMULPDU:
		p.MULPDU = minMULPDU
	}
	qp.conn, qp.p, qp.state = c, p, StateRTS
	qp.rv = wire.RDMAPVersion1
	if p.V2 {
		qp.rv = wire.RDMAPVersion2
		qp.p.RFC7306 = true // V2 requires all of RFC 7306
	}
	qp.tx.msn = [4]uint32{p.FirstSendMSN, p.FirstReadMSN, 1, 1}
	qp.rx.msn = [4]uint32{p.FirstPeerSendMSN, p.FirstPeerReadMSN, 1, 1}
	if c.Options().RecvMarkers {
		// The receive goroutine keeps its role: a waiter only handles
		// FPDUs it has whole (rxrole.go), which markers make costly to tell.
		qp.role.noLend.Store(true)
	}
	qp.orq = newRing[uint64](p.ORD)
	// One entry per IRD credit: responses written but not yet flushed
	// (batched, tx.pend) are no longer in it.
	qp.irq = newRing[irqEntry](p.IRD)
	qp.mu.Unlock()
	qp.startWatchdog()
	go qp.rxLoop()
	go qp.txLoop()
	// Work posted before the connection was up goes out now.
	qp.kick()
	return nil
}
