package rdmap

import (
	"fmt"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// RecvRing is a ring of posted receives: the Core's own receive queue,
// and the ring a shell wraps, with its own lock, to build a shared
// receive queue (it implements RecvSource). A receive is taken by the
// message that uses it and keeps its slot until its completion has been
// consumed (Release); slots are reused in order, so the free pointer
// advances over released slots only, and a CQ can never overrun
// (docs/semantics.md rule 7). It is not safe for concurrent use.
type RecvRing struct {
	table  *mem.Table // resolves the receives' STags
	pd     uint32     // the protection domain of their regions
	ring   []rqEntry
	sge    []Seg
	gen    []mem.Gen
	maxSGE int
	depth  int // the capacity; ring grows to it (growRing)
	// free <= head <= tail: [free, head) taken (in use or awaiting
	// release), [head, tail) posted.
	free, head, tail uint64
}

// PostedRecv is a posted receive as the ring keeps it: its ID and its SGL
// resolved (SGL points into the ring's Seg array).
type PostedRecv struct {
	ID  uint64
	SGL []Seg
}

type rqEntry struct {
	wr       PostedRecv
	gens     []mem.Gen
	released bool
}

// NewRecvRing returns a receive queue of depth receives of up to maxSGE
// elements each, whose buffers are regions of table t in protection domain
// pd.
func NewRecvRing(depth, maxSGE int, t *mem.Table, pd uint32) *RecvRing {
	q := &RecvRing{table: t, pd: pd, maxSGE: maxSGE, depth: depth}
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
	q.sge = make([]Seg, n*q.maxSGE)
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
// the next failed (ErrRQFull, ErrTooManySGE, ErrBadSGE, ErrPD, ErrAccess).
func (q *RecvRing) Post(wrs []RecvWR) (int, error) {
	depth := uint64(q.depth)
	for i := range wrs {
		wr := &wrs[i]
		if q.tail-q.free >= depth {
			return i, fmt.Errorf("recv WR %d (id %d): %w", i, wr.ID, ErrRQFull)
		}
		if len(wr.SGL) > q.maxSGE {
			return i, fmt.Errorf("recv WR %d (id %d): %w", i, wr.ID, ErrTooManySGE)
		}
		if q.tail-q.free >= uint64(len(q.ring)) {
			q.grow()
		}
		slot := int(q.tail % uint64(len(q.ring)))
		lo, hi := slot*q.maxSGE, slot*q.maxSGE+len(wr.SGL)
		gens := q.gen[lo:hi]
		sgl, err := q.resolve(q.sge[lo:lo], gens, wr.SGL)
		if err != nil {
			return i, fmt.Errorf("recv WR %d (id %d): %w", i, wr.ID, err)
		}
		q.ring[slot] = rqEntry{wr: PostedRecv{ID: wr.ID, SGL: sgl}, gens: gens}
		q.tail++
	}
	return len(wrs), nil
}

// resolve resolves a receive's SGL into dst: receive buffers need local
// write access.
func (q *RecvRing) resolve(dst []Seg, gens []mem.Gen, sgl []rdma.SGE) ([]Seg, error) {
	dst, err := resolveSGL(q.table, q.pd, dst, gens, sgl)
	if err != nil {
		return dst, err
	}
	for i := range dst {
		if !dst[i].Region.Access().LocalWrite() {
			return dst, ErrAccess
		}
	}
	return dst, nil
}

// Take removes the oldest posted receive (RecvSource). Its SGL and gens
// stay valid until Release(slot).
func (q *RecvRing) Take() (PostedRecv, []mem.Gen, uint64, bool) {
	if q.head == q.tail {
		return PostedRecv{}, nil, 0, false
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
