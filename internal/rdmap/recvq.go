package rdmap

import (
	"fmt"

	"github.com/goiwarp/iwarp/internal/mem"
)

// RecvRing is a ring of posted receives: the Core's own receive queue,
// and the ring a shell wraps, with its own lock, to build a shared
// receive queue (it implements RecvSource). A receive is taken by the
// message that uses it and keeps its slot until its completion has been
// consumed (Release); slots are reused in order, so the free pointer
// advances over released slots only, and a CQ can never overrun
// (docs/semantics.md rule 7). It is not safe for concurrent use.
type RecvRing struct {
	ring   []rqEntry
	sge    []SGE
	gen    []mem.Gen
	maxSGE int
	depth  int // the capacity; ring grows to it (growRing)
	// free <= head <= tail: [free, head) taken (in use or awaiting
	// release), [head, tail) posted.
	free, head, tail uint64
}

type rqEntry struct {
	wr       RecvWR // SGL points into the queue's SGE array
	gens     []mem.Gen
	released bool
}

// NewRecvRing returns a receive queue of depth receives of up to maxSGE
// elements each.
func NewRecvRing(depth, maxSGE int) *RecvRing {
	q := &RecvRing{maxSGE: maxSGE, depth: depth}
	q.alloc(min(rqInitial, depth))
	return q
}

// rqInitial is the number of slots a RecvRing starts with: it grows,
// doubling up to its depth, only when more receives are posted at once,
// so that an idle QP costs little memory.
const rqInitial = 4

// alloc allocates n slots with their SGE and generation arrays.
func (q *RecvRing) alloc(n int) {
	q.ring = make([]rqEntry, n)
	q.sge = make([]SGE, n*q.maxSGE)
	q.gen = make([]mem.Gen, n*q.maxSGE)
}

// grow doubles the slots (up to the depth) when every slot is in use:
// the entries of [free, tail) move to their slots in the larger arrays
// with their SGLs and generations. The old arrays are not written again,
// so a taken receive's SGL and gens stay valid until its Release.
func (q *RecvRing) grow() {
	old := q.ring
	n := min(2*len(old), q.depth)
	q.alloc(n)
	for seq := q.free; seq < q.tail; seq++ {
		o := &old[seq%uint64(len(old))]
		slot := int(seq % uint64(n))
		e := &q.ring[slot]
		*e = *o
		lo := slot * q.maxSGE
		if o.wr.SGL != nil {
			e.wr.SGL = append(q.sge[lo:lo], o.wr.SGL...)
		}
		if o.gens != nil {
			e.gens = q.gen[lo : lo+len(o.gens)]
			copy(e.gens, o.gens)
		}
	}
}

// Post appends receives in order, recording each SGE's generation (the
// receive may be used only while its regions stay at it); it stops at the
// first that cannot be posted and returns how many were posted and why
// the next failed (ErrRQFull, ErrTooManySGE, ErrBadSGE, ErrAccess).
func (q *RecvRing) Post(wrs []RecvWR) (int, error) {
	depth := uint64(q.depth)
	for i := range wrs {
		wr := &wrs[i]
		if q.tail-q.free >= depth {
			return i, fmt.Errorf("recv WR %d (id %d): %w", i, wr.ID, ErrRQFull)
		}
		if err := q.check(wr); err != nil {
			return i, fmt.Errorf("recv WR %d (id %d): %w", i, wr.ID, err)
		}
		if q.tail-q.free >= uint64(len(q.ring)) {
			q.grow()
		}
		slot := int(q.tail % uint64(len(q.ring)))
		lo, hi := slot*q.maxSGE, slot*q.maxSGE+len(wr.SGL)
		sgl := append(q.sge[lo:lo], wr.SGL...)
		gens := q.gen[lo:hi]
		for j := range sgl {
			gens[j] = sgl[j].Region.Gen()
		}
		q.ring[slot] = rqEntry{wr: RecvWR{ID: wr.ID, SGL: sgl}, gens: gens}
		q.tail++
	}
	return len(wrs), nil
}

// check validates a receive WR locally.
func (q *RecvRing) check(wr *RecvWR) error {
	if len(wr.SGL) > q.maxSGE {
		return ErrTooManySGE
	}
	for j := range wr.SGL {
		s := &wr.SGL[j]
		if s.Region == nil || s.bytes() == nil {
			return ErrBadSGE
		}
		if !s.Region.Access().LocalWrite() {
			return ErrAccess
		}
	}
	return nil
}

// Take removes the oldest posted receive (RecvSource). Its SGL and gens
// stay valid until Release(slot).
func (q *RecvRing) Take() (RecvWR, []mem.Gen, uint64, bool) {
	if q.head == q.tail {
		return RecvWR{}, nil, 0, false
	}
	slot := q.head
	e := &q.ring[slot%uint64(len(q.ring))]
	q.head++
	return e.wr, e.gens, slot, true
}

// Release frees the slot of a taken receive whose completion was consumed.
func (q *RecvRing) Release(slot uint64) {
	if slot < q.free || slot >= q.head {
		return
	}
	d := uint64(len(q.ring))
	q.ring[slot%d].released = true
	for q.free < q.head && q.ring[q.free%d].released {
		q.ring[q.free%d] = rqEntry{}
		q.free++
	}
}

// Posted returns the number of receives posted and not yet taken.
func (q *RecvRing) Posted() int { return int(q.tail - q.head) }

// Depth returns the queue's capacity.
func (q *RecvRing) Depth() int { return q.depth }
