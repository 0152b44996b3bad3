package engine

import (
	"errors"
	"fmt"
	"sync"
)

// Errors of shared receive queues.
var (
	ErrSRQAttached = errors.New("the QP draws its receives from a shared receive queue: post to the SRQ")
	ErrSRQFull     = errors.New("shared receive queue full")
)

// recvQueue is a ring of posted receives: a QP's own receive queue, or a
// shared receive queue (SRQ) several QPs draw from. A receive is taken by
// the receive goroutine of the QP whose message uses it and stays in its
// slot until its completion has been polled (released); slots are reused in
// order, so the free pointer advances over released slots only, and a CQ
// can never overrun (docs/semantics.md rule 7).
//
// Concurrency: everything below mu is guarded by mu.
type recvQueue struct {
	mu     sync.Mutex
	ring   []rqEntry
	sge    []SGE
	maxSGE int
	// free <= head <= tail: [free, head) taken (in use or awaiting
	// release), [head, tail) posted.
	free, head, tail uint64
	// closed: the queue was flushed for good (takeAll); posting fails.
	closed bool

	// SRQ limit event (verbs' srq_limit): fired once when fewer than
	// limit receives remain posted after a take, then disarmed.
	limit   int
	onLimit func()
	// reserved are the CQs this SRQ reserved its depth in.
	reserved map[*CQ]bool
}

type rqEntry struct {
	wr       RecvWR // SGL points into the queue's SGE array
	seq      uint64
	released bool
}

func newRecvQueue(depth, maxSGE int) *recvQueue {
	return &recvQueue{ring: make([]rqEntry, depth), sge: make([]SGE, depth*maxSGE), maxSGE: maxSGE}
}

// errRQClosed: receives were posted to a queue that has been flushed.
var errRQClosed = errors.New("receive queue flushed")

// post appends receives in order; it stops at the first that cannot be
// posted. A closed queue takes none (errRQClosed).
func (q *recvQueue) post(wrs []RecvWR, full error) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, errRQClosed
	}
	depth := uint64(len(q.ring))
	for i := range wrs {
		wr := &wrs[i]
		if q.tail-q.free >= depth {
			return i, fmt.Errorf("recv WR %d (id %d): %w", i, wr.ID, full)
		}
		if len(wr.SGL) > q.maxSGE {
			return i, fmt.Errorf("recv WR %d (id %d): %w", i, wr.ID, ErrTooManySGE)
		}
		for j := range wr.SGL {
			s := &wr.SGL[j]
			if s.Region == nil || s.bytes() == nil {
				return i, fmt.Errorf("recv WR %d (id %d): %w", i, wr.ID, ErrBadSGE)
			}
			if !s.Region.Access().LocalWrite() {
				return i, fmt.Errorf("recv WR %d (id %d): %w", i, wr.ID, ErrAccess)
			}
		}
		slot := int(q.tail % depth)
		sgl := q.sge[slot*q.maxSGE : slot*q.maxSGE : (slot+1)*q.maxSGE]
		q.ring[slot] = rqEntry{wr: RecvWR{ID: wr.ID, SGL: append(sgl, wr.SGL...)}, seq: q.tail}
		q.tail++
	}
	return len(wrs), nil
}

// take removes the oldest posted receive for a message, or returns nil.
// The entry stays valid until it is released.
func (q *recvQueue) take() *rqEntry {
	q.mu.Lock()
	if q.head == q.tail {
		q.mu.Unlock()
		return nil
	}
	e := &q.ring[q.head%uint64(len(q.ring))]
	q.head++
	var fire func()
	if q.onLimit != nil && q.limit > 0 && int(q.tail-q.head) < q.limit {
		q.limit, fire = 0, q.onLimit
	}
	q.mu.Unlock()
	if fire != nil {
		fire()
	}
	return e
}

// release frees the slot of the receive seq, whose completion was polled.
func (q *recvQueue) release(seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if seq < q.free || seq >= q.head {
		return
	}
	d := uint64(len(q.ring))
	q.ring[seq%d].released = true
	for q.free < q.head && q.ring[q.free%d].released {
		q.free++
	}
}

// takeAll closes the queue and removes every posted receive, for flushing
// a QP's own queue: a receive posted concurrently is either taken here or
// refused by post, never left behind uncompleted.
func (q *recvQueue) takeAll(f func(*rqEntry)) {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	for {
		e := q.take()
		if e == nil {
			return
		}
		f(e)
	}
}

// posted returns the number of receives posted and not yet taken.
func (q *recvQueue) posted() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int(q.tail - q.head)
}

// SRQ is a shared receive queue: QPs created with Config.SRQ take their
// receives from it instead of a queue of their own.
type SRQ struct {
	q *recvQueue
	// User is the owner's handle, passed to the limit callback.
	User any
}

// NewSRQ returns a shared receive queue of depth receives of up to maxSGE
// elements each.
func NewSRQ(depth, maxSGE int) (*SRQ, error) {
	if depth < 1 || maxSGE < 1 {
		return nil, errors.New("SRQ depth and SGE count must be positive")
	}
	return &SRQ{q: newRecvQueue(depth, maxSGE)}, nil
}

// PostRecv posts receives to the SRQ.
func (s *SRQ) PostRecv(wrs []RecvWR) (int, error) { return s.q.post(wrs, ErrSRQFull) }

// Arm sets the limit event: fn is called once (on the goroutine holding a
// QP's receive role: its receive goroutine or a waiter; it must not block)
// when fewer than limit receives remain posted.
func (s *SRQ) Arm(limit int, fn func(*SRQ)) {
	s.q.mu.Lock()
	s.q.limit = limit
	s.q.onLimit = func() { fn(s) }
	s.q.mu.Unlock()
}

// Posted returns the number of receives posted and not yet used.
func (s *SRQ) Posted() int { return s.q.posted() }

// Depth returns the SRQ's capacity.
func (s *SRQ) Depth() int { return len(s.q.ring) }

// reserveIn reserves the SRQ's depth in cq once: whichever of its QPs a
// receive completes on, at most depth receive completions of this SRQ can
// be waiting in cq.
func (s *SRQ) reserveIn(cq *CQ) error {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if s.q.reserved[cq] {
		return nil
	}
	if err := cq.reserve(len(s.q.ring)); err != nil {
		return err
	}
	if s.q.reserved == nil {
		s.q.reserved = make(map[*CQ]bool)
	}
	s.q.reserved[cq] = true
	return nil
}
