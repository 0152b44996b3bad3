package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// sqEntry is one send work request, from PostSend until its slot is
// released.
type sqEntry struct {
	wr   SendWR    // as posted, without its SGL (nil): sgl is the resolved copy
	sgl  []Seg     // the SGL resolved at post time; points into Core.sqSGE
	gens []mem.Gen // gens[i]: sgl[i].Region's generation at post time
	seq  uint64

	complete bool
	cqe      bool // a completion was reported for it
	released bool // its completion was consumed: the slot may be reused
	status   rdma.Status
	err      error

	inline   []byte // Inline: the payload, copied at post time
	size     uint64 // payload bytes (Read: bytes to read)
	read     uint64 // Read, Read V2: response bytes placed
	original uint64 // atomic: the value found at the target
	sinkSTag uint32 // Read: the sink STag and TO named in the request
	sinkTO   uint64
	// inv is the invalidation a Local Invalidate or a Read with
	// Invalidate began: the WR's completion waits until it drained.
	inv *mem.Invalidation
	// leased: the SGL's regions are leased while the message is sent.
	leased  bool
	stalled bool // counted once in ORDStalls
}

// entry returns the send-queue entry of sequence number seq.
func (c *Core) entry(seq uint64) *sqEntry { return &c.sq[seq%uint64(len(c.sq))] }

// advanceSQ reports the send-queue completions that are due, in posting
// order: a signaled WR's, and any failed one's.
func (c *Core) advanceSQ() {
	for c.sqDone < c.sqNext {
		e := c.entry(c.sqDone)
		if !e.complete || !c.drained(&e.inv) {
			return
		}
		c.sqDone++
		c.progress++
		signaled := e.wr.Flags&rdma.Signaled != 0
		if !signaled && e.status == rdma.StatusSuccess {
			continue
		}
		comp := Completion{Queue: SendQueue, Signaled: signaled, Slot: e.seq, Completion: rdma.Completion{
			ID: e.wr.ID, QPNum: c.cfg.QPNum, Status: e.status, Op: e.wr.Op, Len: int(e.size), Err: e.err, Original: e.original}}
		if atomic(&e.wr) {
			comp.Len = 8
		}
		e.cqe = true
		c.out = append(c.out, comp)
	}
}

// failWR completes e with a local protection error (its buffer was
// invalidated, deregistered or re-keyed) and fails the QP, as verbs does:
// every other outstanding WR is flushed.
func (c *Core) failWR(e *sqEntry) {
	if !e.complete {
		e.complete, e.status, e.err = true, rdma.StatusLocalProtection, ErrLocalProtection
	}
	c.toError(ErrLocalProtection)
}

// ReleaseSend frees the slot of the send WR whose completion (Slot) was
// consumed, and the slots of the unsignaled WRs before it (verbs: an
// unsignaled WR's slot is freed by a later completion). Slots are reused
// in order, so the free pointer advances over released entries only.
func (c *Core) ReleaseSend(slot uint64) {
	if slot < c.sqFree || slot >= c.sqDone {
		return
	}
	c.entry(slot).released = true
	for s := slot; s > c.sqFree; s-- {
		e := c.entry(s - 1)
		if e.cqe {
			break
		}
		e.released = true
	}
	for c.sqFree < c.sqDone && c.entry(c.sqFree).released {
		*c.entry(c.sqFree) = sqEntry{}
		c.sqFree++
	}
}

// ReleaseRecv frees the slot of a receive of the Core's own receive queue
// whose completion (Slot) was consumed. With a shared receive queue the
// shell releases the slot in its queue instead.
func (c *Core) ReleaseRecv(slot uint64) {
	if c.rq != nil {
		c.rq.Release(slot)
	}
}

// sqInitial is the number of send-queue slots a Core starts with: the
// arrays grow, doubling up to the configured depth, only when more WRs
// are outstanding at once, so that an idle QP costs little memory.
const sqInitial = 4

// newSQ allocates n send-queue slots with their SGE, generation and
// inline arrays.
func (c *Core) newSQ(n int) {
	c.sq = make([]sqEntry, n)
	c.sqSGE = make([]Seg, n*c.cfg.MaxSGE)
	c.sqGen = make([]mem.Gen, n*c.cfg.MaxSGE)
	c.sqInline = nil
	if c.cfg.MaxInline > 0 {
		c.sqInline = make([]byte, n*c.cfg.MaxInline)
	}
}

// growSQ doubles the send queue's slots (up to the configured depth) when
// every slot is in use: the entries of [sqFree, sqTail) move to their
// slots in the larger arrays, with their SGLs, generations and inline
// payloads, and the message being transmitted follows its entry. The old
// arrays are not written again: an Encoder still referencing an old
// inline payload reads what it held.
func (c *Core) growSQ() {
	old := c.sq
	n := min(2*len(old), c.cfg.SQDepth)
	c.newSQ(n)
	for seq := c.sqFree; seq < c.sqTail; seq++ {
		o := &old[seq%uint64(len(old))]
		slot := int(seq % uint64(n))
		e := &c.sq[slot]
		*e = *o
		if o.inline != nil {
			lo := slot * c.cfg.MaxInline
			e.inline = c.sqInline[lo : lo+len(o.inline)]
			copy(e.inline, o.inline)
		}
		if o.sgl != nil {
			lo := slot * c.cfg.MaxSGE
			e.sgl = append(c.sqSGE[lo:lo], o.sgl...)
		}
		if o.gens != nil {
			lo := slot * c.cfg.MaxSGE
			e.gens = c.sqGen[lo : lo+len(o.gens)]
			copy(e.gens, o.gens)
		}
		if c.tx.cur.e == o {
			c.tx.cur.e = e
		}
	}
}
