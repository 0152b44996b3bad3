package rdmap

import (
	"errors"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Params are what connection setup negotiated.
type Params struct {
	IRD, ORD int // inbound / outbound Read (and atomic) limits
	// MULPDU is the largest ULPDU sent; 0 means the MULPDU of
	// fpdu.DefaultEMSS, and anything below minMULPDU is raised to it.
	MULPDU int
	// FirstMSN are the first MSNs to use on QN 0 and QN 1 in each direction
	// (2 where a Send or Read RTR used MSN 1; 0 means 1).
	FirstSendMSN, FirstReadMSN         uint32
	FirstPeerSendMSN, FirstPeerReadMSN uint32
	// RFC7306: the peer agreed to (or was declared to support) RFC 7306,
	// so this side may send its messages. Received RFC 7306 messages are
	// processed whatever this says (extensions.md §3.4).
	RFC7306 bool
	// V2: both sides agreed to the RDMAP Extensions V2 draft: every message
	// in both directions carries RDMAP version 2 (5-bit opcodes), and the
	// V2 messages (Send with Immediate, Read V2) may be sent. V2 implies
	// RFC7306.
	V2 bool
}

// RecvSource is where untagged messages (Sends, Immediate Data) find their
// receive buffers: the Core's own receive queue, or a shared receive queue
// the shell implements with its own lock (RecvRing is the ring such a
// shell wraps).
type RecvSource interface {
	// Take removes the oldest posted receive. gens are the generations
	// of its SGEs' regions recorded when it was posted (gens[i] for
	// wr.SGL[i]); slot names its queue slot, which the source keeps
	// (with the SGL) until the receive's completion has been consumed
	// (Completion.Slot). ok is false when nothing is posted. Take must not
	// block.
	Take() (wr PostedRecv, gens []mem.Gen, slot uint64, ok bool)
}

// Config is the shape of one QP's core.
type Config struct {
	Table *mem.Table
	PD    uint32
	// QPNum is the QP's number, stamped on its completions.
	QPNum uint32

	SQDepth   int // send work requests outstanding at once
	RQDepth   int // receive work requests posted at once (own receive queue only)
	MaxSGE    int // SGEs per work request
	MaxInline int // bytes of inline data per work request

	// Recv, if set, is a shared receive queue the Core takes its receives
	// from; nil gives the Core its own receive queue: OwnRecv if set (a
	// ring the shell created before the connection was up, so that
	// receives could be posted early), else a new one of RQDepth.
	Recv    RecvSource
	OwnRecv *RecvRing

	Params Params

	// Framing is the connection's MPA framing; RxOff and TxOff are the
	// stream offsets where full operation begins in each direction
	// (markers are placed relative to them, RFC 5044 §4.3).
	Framing      fpdu.Options
	RxOff, TxOff uint64

	// Holder is the mem.Holder the Core's leases name: the shell's, which
	// takes the shell's lock and calls Core.Revoke, because a revocation
	// runs on the goroutine of an invalidation. nil names the Core itself
	// (for a Core used by one goroutine only, as in the simulation).
	Holder mem.Holder
	// Wake, if set, is registered with every invalidation a completion
	// waits for (Send with Invalidate, Local Invalidate, Read with
	// Invalidate): it runs once the invalidation has drained, on whatever
	// goroutine dropped the last pin or lease, possibly at once inside
	// the Core's own call. It must not block nor call the Core; it asks
	// the shell to drive the Core again (Poll then returns the deferred
	// completions).
	Wake func()
}

// MaxMessageSize is the largest message (Send, Write or Read) one work
// request may carry: 2^31 bytes, well inside RDMAP's 32-bit sizes.
const MaxMessageSize = 1 << 31

// minMULPDU is the smallest MULPDU the Core segments to: an untagged
// header and a few payload bytes.
const minMULPDU = wire.UntaggedHdrLen + 4

// Core is the RDMAP/DDP protocol state of one QP, without I/O: the send
// queue and its progress, the receive queue (or a shared one), the
// outstanding Reads and atomics in both directions (ORQ, IRQ), the MSNs,
// the state, the first error and the Terminate to send. It is driven by
// calls and byte slices, never blocks, starts no goroutine and holds no
// lock: one goroutine at a time uses it (the shell's lock).
type Core struct {
	cfg    Config
	p      Params
	rv     uint8 // the RDMAP version of the stream: 1, or 2 once V2 is agreed
	holder mem.Holder

	state rdma.QPState
	err   error // the first error: why the QP left RTS

	// Send queue: a ring of cfg.SQDepth entries addressed by sequence
	// numbers. sqFree <= sqDone <= sqNext <= sqTail: [sqFree, sqDone)
	// completed, slots not yet released; [sqDone, sqNext) started
	// (transmitting, or awaiting a response); [sqNext, sqTail) waiting.
	sq                             []sqEntry
	sqSGE                          []Seg
	sqGen                          []mem.Gen
	sqInline                       []byte
	sqFree, sqDone, sqNext, sqTail uint64

	// rq is the Core's own receive queue (nil with Config.Recv); recv is
	// where receives come from (rq or Config.Recv).
	rq   *RecvRing
	recv RecvSource

	// orq are this side's outstanding Reads, Read V2s and atomics, in
	// order (at most ORD): their send-queue sequence numbers.
	orq ring[uint64]
	// irq are the peer's requests to answer, in order (at most IRD). An
	// entry leaves it, with its IRD credit, when its response's last
	// FPDU has been handed to the Encoder.
	irq ring[irqEntry]

	tx txState
	rx rxState

	// out holds completions ready for Poll; rcq receive completions that
	// wait (with all later receive completions) for an invalidation to
	// drain; deferred counts the completions waiting for a drain.
	out      []Completion
	rcq      fifo[pendingRecv]
	deferred int
	// atomicsIn counts the peer's Atomic Requests accepted into the IRQ,
	// atomicsRun those executed (or dropped by the flush): a receive
	// completion waits until every atomic accepted before it ran, so that
	// at a Send's completion the target already holds the result of an
	// earlier atomic (docs/extensions.md, "Ordering guarantees").
	atomicsIn, atomicsRun uint64

	// termDue is a Terminate decided and not yet handed to the Encoder;
	// termWanted stays true once this side decided to send one;
	// termWritten once its last octet was consumed.
	termDue     *TerminateError
	termWanted  bool
	termWritten bool
	// shut: WantHalfClose told the shell to half-close after Disconnect;
	// nothing more is handed out.
	shut bool

	progress uint64
	stats    Counters
}

// New returns the core of a QP whose MPA connection has reached full
// operation: the QP is in RTS.
func New(cfg Config) (*Core, error) {
	switch {
	case cfg.Recv != nil:
		cfg.RQDepth, cfg.OwnRecv = 0, nil
	case cfg.OwnRecv != nil:
		cfg.RQDepth = cfg.OwnRecv.Depth()
	}
	if cfg.SQDepth < 1 || (cfg.RQDepth < 1 && cfg.Recv == nil) || cfg.MaxSGE < 1 || cfg.MaxInline < 0 || cfg.Table == nil {
		return nil, errors.New("incomplete QP configuration")
	}
	p := cfg.Params
	if p.IRD < 0 || p.ORD < 0 {
		return nil, errors.New("negative IRD or ORD")
	}
	for _, m := range []*uint32{&p.FirstSendMSN, &p.FirstReadMSN, &p.FirstPeerSendMSN, &p.FirstPeerReadMSN} {
		if *m == 0 {
			*m = 1
		}
	}
	if p.MULPDU <= 0 {
		p.MULPDU = fpdu.MULPDU(fpdu.DefaultEMSS, cfg.Framing.SendMarkers)
	}
	p.MULPDU = clampMULPDU(p.MULPDU)
	c := &Core{
		cfg:   cfg,
		p:     p,
		rv:    wire.RDMAPVersion1,
		state: rdma.StateRTS,
		orq:   newRing[uint64](p.ORD),
		irq:   newRing[irqEntry](p.IRD),
	}
	c.newSQ(min(sqInitial, cfg.SQDepth))
	if p.V2 {
		c.rv = wire.RDMAPVersion2
		c.p.RFC7306 = true // V2 requires all of RFC 7306
	}
	c.holder = cfg.Holder
	if c.holder == nil {
		c.holder = c
	}
	switch {
	case cfg.Recv != nil:
		c.recv = cfg.Recv
	case cfg.OwnRecv != nil:
		c.rq, c.recv = cfg.OwnRecv, cfg.OwnRecv
	default:
		c.rq = NewRecvRing(cfg.RQDepth, cfg.MaxSGE, cfg.Table, cfg.PD)
		c.recv = c.rq
	}
	c.tx.init(cfg, p)
	c.rx.init(cfg, p)
	return c, nil
}

// State returns the QP's state.
func (c *Core) State() rdma.QPState { return c.state }

// clampMULPDU raises n to minMULPDU and lowers it to the largest ULPDU
// the 16-bit length field carries.
func clampMULPDU(n int) int { return min(max(n, minMULPDU), fpdu.MaxULPDULen) }

// MULPDU returns the largest ULPDU the Core puts into an FPDU now.
func (c *Core) MULPDU() int { return c.p.MULPDU }

// RaiseMULPDU raises the largest ULPDU of the FPDUs the Core builds from
// now on to n (clamped as Params.MULPDU is); a smaller n changes
// nothing. Segments already built keep their size; the next segment of a
// message in progress takes the new one: a DDP message's segments need
// not be of one size (RFC 5041 §5), and the Data Sink places each by its
// own header. It never lowers the MULPDU, so that a message chosen to be
// copied into one FPDU (prepareSources) still fits one. The shell calls
// it when the connection's MSS grew.
func (c *Core) RaiseMULPDU(n int) {
	if n = clampMULPDU(n); n > c.p.MULPDU {
		c.p.MULPDU = n
	}
}

// Err returns the error that took the QP out of RTS (a *TerminateError, a
// *ConnectionError, or one of ErrPeerDisconnected, ErrLocallyClosed,
// ErrDisconnected, ErrLocalProtection), or nil.
func (c *Core) Err() error { return c.err }

// Params returns the parameters in use (defaults filled in).
func (c *Core) Params() Params { return c.p }

// Progress increases whenever octets move in either direction or a work
// request completes: the shell's operation timeout watches it while
// Waiting reports true.
func (c *Core) Progress() uint64 { return c.progress }

// IRDInUse returns how many of the peer's Read and atomic requests are
// accepted and not yet fully answered.
func (c *Core) IRDInUse() int { return c.irq.len() }

// ORDInUse returns how many of this side's Reads and atomics are
// outstanding.
func (c *Core) ORDInUse() int { return c.orq.len() }

// Stats returns the QP's counters. They are updated under the caller's
// lock, like everything in the Core.
func (c *Core) Stats() *Counters { return &c.stats }
