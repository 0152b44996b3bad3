package verbs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// Errors of the completion queue API.
var (
	ErrCQFull   = errors.New("completion queue capacity exhausted by the queues attached to it")
	ErrCQClosed = errors.New("completion queue closed")
)

// Arm states of a CQ (verbs' ibv_req_notify_cq).
const (
	disarmed = iota
	armedNext
	armedSolicited
)

// EventChannel delivers "this CQ has a completion you asked to hear
// about" notifications from any number of CQs to one waiter (verbs'
// completion channel).
//
// Events are coalesced: C holds at most one event per CQ. A CQ that fires
// while its previous event is still in C (not yet received: the CQ was
// re-armed before its event was taken) adds none, because the event
// pending in C is received after the completion that fired was queued, so
// a consumer that takes an event, arms the CQ and then polls it misses
// nothing. An event that was received is never counted as pending: the
// next firing adds a new one. Pushing never blocks and the last event of a
// CQ is never lost.
type EventChannel struct {
	C chan *CQ

	// mu orders the pushes; pushed counts them. An event is still in C
	// iff its sequence number (CQ.evSeq) is above pushed - len(C): C is
	// FIFO and only pushes (under mu) add to it.
	mu     sync.Mutex
	pushed uint64
}

// NewEventChannel returns an event channel whose C buffers up to n events.
// Since events are coalesced to one per CQ, n at least the number of CQs
// bound to it never blocks; with more CQs than that, an event that finds C
// full is handed over by a goroutine of its own (the pusher still does
// not block and the event is not lost, but it may then come twice).
func NewEventChannel(n int) *EventChannel {
	return &EventChannel{C: make(chan *CQ, n)}
}

// push adds cq's event to C unless one is already pending there. It never
// blocks.
func (ch *EventChannel) push(cq *CQ) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if cq.evSeq > ch.pushed-uint64(len(ch.C)) {
		return // cq's event is still in C: it is received after this firing
	}
	select {
	case ch.C <- cq:
		ch.pushed++
		cq.evSeq = ch.pushed
	default: // more CQs than C holds: hand it over without blocking
		go func() { ch.C <- cq }()
	}
}

// CQE is one completion queue entry: a work request's completion and the
// QP it belongs to.
type CQE struct {
	rdmap.Completion
	QP *QP
}

// CQ is a completion queue. Its capacity is fixed; every queue attached to
// it reserves as many entries as it has slots, and a work request's slot is
// freed only when its completion has been polled, so a CQ can never
// overrun and no completion is ever dropped (docs/semantics.md rule 7).
type CQ struct {
	// Context is the user's handle, for the event channel's receivers.
	Context any

	// channel is set by NewCQ, read-only after.
	channel *EventChannel
	// evSeq is the sequence number of the CQ's last event pushed into
	// channel.C (guarded by channel.mu).
	evSeq uint64
	// wake is signalled (never blocking) after each push and at Close;
	// a waiter that finds a completion passes it on.
	wake chan struct{}

	// mu guards the ring, the reservations and the arm state. It is taken
	// after a QP's mu (a QP pushes under its own lock), never before.
	mu sync.Mutex
	// ring grows by doubling up to capacity as completions queue up (an
	// idle CQ holds little memory); capacity is what the queues reserve.
	ring     []CQE
	capacity int
	head     int // index of the oldest entry
	n        int // number of entries
	reserved int
	armed    int
	closed   bool
	// members are the QPs whose completions come here (once per queue
	// attached), and shared is set once an SRQ's come too: Wait reads a
	// QP's socket itself only when that QP is the only source.
	members []*QP
	shared  bool
	// reader is the QP whose socket a Wait is reading (waitReading): a
	// completion added by anyone else interrupts its park.
	reader atomic.Pointer[QP]

	// pollMu guards scratch, the entries PollCompletions moves out of the
	// ring before it releases their slots (outside mu: a release takes the
	// QP's lock, which is taken before mu).
	pollMu  sync.Mutex
	scratch [64]CQE
}

// NewCQ returns a completion queue for up to capacity entries, notifying
// ch (which may be nil) when armed.
func NewCQ(capacity int, ch *EventChannel) *CQ {
	capacity = max(capacity, 1)
	return &CQ{ring: make([]CQE, min(capacity, cqInitial)), capacity: capacity, channel: ch, wake: make(chan struct{}, 1)}
}

// cqInitial is the ring a CQ starts with.
const cqInitial = 8

// Cap returns the CQ's capacity.
func (cq *CQ) Cap() int { return cq.capacity }

// reserve sets n entries aside for a queue being attached.
func (cq *CQ) reserve(n int) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return ErrCQClosed
	}
	if cq.reserved+n > cq.capacity {
		return ErrCQFull
	}
	cq.reserved += n
	return nil
}

// join records q as a source of the CQ's completions (nil: an SRQ's,
// from any QP).
func (cq *CQ) join(q *QP) {
	cq.mu.Lock()
	if q == nil {
		cq.shared = true
	} else {
		cq.members = append(cq.members, q)
	}
	cq.mu.Unlock()
}

// leave forgets one join of q.
func (cq *CQ) leave(q *QP) {
	cq.mu.Lock()
	for i, m := range cq.members {
		if m == q {
			cq.members = append(cq.members[:i], cq.members[i+1:]...)
			break
		}
	}
	cq.mu.Unlock()
}

// sole returns the only QP whose completions come to the CQ, or nil.
func (cq *CQ) sole() *QP {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.shared || len(cq.members) == 0 {
		return nil
	}
	q := cq.members[0]
	for _, m := range cq.members[1:] {
		if m != q {
			return nil
		}
	}
	return q
}

// unreserve gives back what reserve took, when a queue is destroyed.
func (cq *CQ) unreserve(n int) {
	cq.mu.Lock()
	cq.reserved -= n
	cq.mu.Unlock()
}

// add appends a completion of q without waking anyone, and reports
// whether the arm it met must notify the event channel (notify does
// both). A full ring doubles: up to the capacity as the queue fills, and
// beyond it only for a completion that comes after its QP gave its
// reservation back (an invalidation that drained late), which is kept
// rather than lost; the reservations make anything else impossible.
func (cq *CQ) add(c *rdmap.Completion, q *QP) (fire bool) {
	cq.mu.Lock()
	if cq.n == len(cq.ring) {
		grown := make([]CQE, 2*len(cq.ring))
		for i := 0; i < cq.n; i++ {
			grown[i] = cq.ring[(cq.head+i)%len(cq.ring)]
		}
		cq.ring, cq.head = grown, 0
	}
	e := &cq.ring[(cq.head+cq.n)%len(cq.ring)]
	e.Completion, e.QP = *c, q
	cq.n++
	if cq.armed == armedNext || (cq.armed == armedSolicited && (c.Solicited || c.Status != rdma.StatusSuccess)) {
		cq.armed = disarmed
		fire = true
	}
	cq.mu.Unlock()
	return fire
}

// notify wakes the CQ's waiters after one or more adds, and notifies the
// event channel if an add met its arm. It never blocks.
func (cq *CQ) notify(fire bool, self *QP) {
	if r := cq.reader.Load(); r != nil && r != self {
		r.interruptReader()
	}
	select {
	case cq.wake <- struct{}{}:
	default:
	}
	if fire && cq.channel != nil {
		cq.channel.push(cq)
	}
}

// Poll moves up to len(out) completions, oldest first, into out and
// returns how many. It does not block and does not allocate. Polling a
// completion frees its work request's queue slot.
func (cq *CQ) Poll(out []CQE) int {
	cq.mu.Lock()
	k := min(len(out), cq.n)
	for i := 0; i < k; i++ {
		j := (cq.head + i) % len(cq.ring)
		out[i] = cq.ring[j]
		cq.ring[j] = CQE{}
	}
	cq.head = (cq.head + k) % len(cq.ring)
	cq.n -= k
	cq.mu.Unlock()
	for i := 0; i < k; i++ {
		out[i].QP.release(&out[i].Completion)
	}
	return k
}

// PollCompletions is Poll for a caller that needs only the completions
// as package rdma defines them: it moves up to len(out) of them, oldest
// first, into out and returns how many. It does not allocate.
func (cq *CQ) PollCompletions(out []rdma.Completion) int {
	cq.pollMu.Lock()
	defer cq.pollMu.Unlock()
	total := 0
	for total < len(out) {
		n := cq.Poll(cq.scratch[:min(len(cq.scratch), len(out)-total)])
		for i := 0; i < n; i++ {
			out[total+i] = cq.scratch[i].Completion.Completion
			cq.scratch[i] = CQE{}
		}
		total += n
		if n == 0 {
			break
		}
	}
	return total
}

// Len returns the number of completions waiting to be polled.
func (cq *CQ) Len() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.n
}

// Wait blocks until the CQ holds a completion, ctx ends, or the CQ is
// closed (ErrCQClosed).
func (cq *CQ) Wait(ctx context.Context) error {
	for {
		cq.mu.Lock()
		n, closed := cq.n, cq.closed
		cq.mu.Unlock()
		if n > 0 || closed {
			// Pass the wake-up on: another waiter may be parked too.
			select {
			case cq.wake <- struct{}{}:
			default:
			}
			if n > 0 {
				return nil
			}
			return ErrCQClosed
		}
		if q := cq.sole(); q != nil && cq.reader.CompareAndSwap(nil, q) {
			ok, err := q.waitReading(ctx, nil, cq)
			cq.reader.Store(nil)
			if ok {
				if err != nil {
					return err
				}
				continue
			}
		}
		select {
		case <-cq.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Arm requests one notification on the CQ's event channel for the next
// completion (solicitedOnly false) or the next solicited or error
// completion (solicitedOnly true). Completions already queued do not fire
// it.
func (cq *CQ) Arm(solicitedOnly bool) {
	cq.mu.Lock()
	switch {
	case !solicitedOnly:
		cq.armed = armedNext
	case cq.armed != armedNext:
		cq.armed = armedSolicited
	}
	cq.mu.Unlock()
}

// Close marks the CQ closed and wakes its waiters, a waiter reading its
// QP's socket too. Completions still queued can be polled.
func (cq *CQ) Close() {
	cq.mu.Lock()
	cq.closed = true
	cq.mu.Unlock()
	select {
	case cq.wake <- struct{}{}:
	default:
	}
	// A reading waiter parks in the socket's read, not on wake: interrupt
	// it. One that took the reader role after this load sees closed
	// (written above) before it parks.
	if q := cq.reader.Load(); q != nil {
		q.interruptReader()
	}
}

// release frees the queue slot of a completion that was consumed.
func (q *QP) release(c *rdmap.Completion) {
	switch {
	case c.Queue == rdmap.SendQueue:
		q.mu.Lock()
		q.core.ReleaseSend(c.Slot)
		q.mu.Unlock()
	case q.cfg.SRQ != nil:
		q.cfg.SRQ.release(c.Slot)
	default:
		q.mu.Lock()
		q.rq.Release(c.Slot)
		q.mu.Unlock()
	}
}
