package engine

import (
	"context"
	"errors"
	"sync"
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

// EventChannel delivers "this CQ has a completion you asked to hear about"
// notifications from any number of CQs to one waiter (verbs' completion
// channel).
type EventChannel struct {
	C chan *CQ
}

// NewEventChannel returns an event channel that buffers up to n pending
// notifications; a CQ fires at most once per Arm, so n at least the number
// of CQs bound to it never blocks.
func NewEventChannel(n int) *EventChannel {
	return &EventChannel{C: make(chan *CQ, n)}
}

// CQ is a completion queue. Its capacity is fixed; every queue attached to
// it reserves as many entries as it has slots, and a work request's slot is
// freed only when its completion has been polled, so a CQ can never overrun
// and no completion is ever dropped (docs/semantics.md).
//
// Concurrency: all fields below mu are guarded by mu; wake is signalled
// (never blocking) after each push.
type CQ struct {
	mu       sync.Mutex
	ring     []CQE
	head     int // index of the oldest entry
	n        int // number of entries
	reserved int
	armed    int
	closed   bool
	channel  *EventChannel
	// qps are the QPs whose queues complete here; with exactly one, a
	// waiter may borrow its receive role (rxrole.go).
	qps []*QP
	// Context is the user's handle, for the event channel's receivers.
	Context any

	wake chan struct{}
}

// NewCQ returns a completion queue for up to capacity entries, notifying ch
// (which may be nil) when armed.
func NewCQ(capacity int, ch *EventChannel) *CQ {
	if capacity < 1 {
		capacity = 1
	}
	return &CQ{ring: make([]CQE, capacity), channel: ch, wake: make(chan struct{}, 1)}
}

// Cap returns the CQ's capacity.
func (cq *CQ) Cap() int { return len(cq.ring) }

// attach records that qp completes work here. A waiter borrowing the
// previously sole QP's receive role is woken: it may not any more.
func (cq *CQ) attach(qp *QP) {
	cq.mu.Lock()
	for _, q := range cq.qps {
		if q == qp {
			cq.mu.Unlock()
			return
		}
	}
	prev := cq.soleLocked()
	cq.qps = append(cq.qps, qp)
	cq.mu.Unlock()
	if prev != nil {
		prev.interruptPoll()
	}
}

// detach undoes attach.
func (cq *CQ) detach(qp *QP) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	for i, q := range cq.qps {
		if q == qp {
			cq.qps = append(cq.qps[:i], cq.qps[i+1:]...)
			return
		}
	}
}

// soleLocked returns the only QP attached, or nil. Callers hold mu.
func (cq *CQ) soleLocked() *QP {
	if len(cq.qps) == 1 {
		return cq.qps[0]
	}
	return nil
}

// rxReady reports that a waiter borrowing a receive role must stop: the
// CQ holds a completion, was closed, or is no longer fed by one QP only.
func (cq *CQ) rxReady() bool {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.n > 0 || cq.closed || len(cq.qps) != 1
}

// reserve sets n entries aside for a queue being attached.
func (cq *CQ) reserve(n int) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return ErrCQClosed
	}
	if cq.reserved+n > len(cq.ring) {
		return ErrCQFull
	}
	cq.reserved += n
	return nil
}

// unreserve gives back what reserve took, when a queue is destroyed.
func (cq *CQ) unreserve(n int) {
	cq.mu.Lock()
	cq.reserved -= n
	cq.mu.Unlock()
}

// push appends e. The reservation rule means the ring cannot be full; if it
// ever were, the ring grows rather than lose a completion.
func (cq *CQ) push(e *CQE) {
	cq.mu.Lock()
	if cq.n == len(cq.ring) {
		grown := make([]CQE, 2*len(cq.ring))
		for i := 0; i < cq.n; i++ {
			grown[i] = cq.ring[(cq.head+i)%len(cq.ring)]
		}
		cq.ring, cq.head = grown, 0
	}
	cq.ring[(cq.head+cq.n)%len(cq.ring)] = *e
	cq.n++
	var fire *EventChannel
	if cq.armed == armedNext || (cq.armed == armedSolicited && (e.Flags&Solicited != 0 || e.Status != StatusSuccess)) {
		cq.armed = disarmed
		fire = cq.channel
	}
	sole := cq.soleLocked()
	cq.mu.Unlock()
	select {
	case cq.wake <- struct{}{}:
	default:
	}
	if sole != nil {
		sole.interruptPoll() // a waiter may be reading the socket
	}
	if fire != nil {
		select {
		case fire.C <- cq:
		default: // a notification for this CQ is already pending
		}
	}
}

// Poll moves up to len(out) completions, oldest first, into out and returns
// how many. It does not block and does not allocate. Polling a completion
// frees its work request's queue slot.
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
		e := &out[i]
		switch {
		case e.rq != nil:
			e.rq.release(e.rqSeq)
		case e.QP != nil:
			e.QP.sqRelease(e.sqSeq)
		}
	}
	return k
}

// Len returns the number of completions waiting to be polled.
func (cq *CQ) Len() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.n
}

// Wait blocks until the CQ holds a completion, ctx ends, or the CQ is
// closed. On a CQ that only one QP feeds, the waiter may run that QP's
// receive path itself meanwhile (rxrole.go).
func (cq *CQ) Wait(ctx context.Context) error {
	var wanted *QP
	defer func() {
		if wanted != nil {
			wanted.role.wanted.Add(-1)
		}
	}()
	for {
		cq.mu.Lock()
		n, closed, sole := cq.n, cq.closed, cq.soleLocked()
		cq.mu.Unlock()
		if n > 0 {
			// Pass the wake-up on: another waiter may be parked too.
			select {
			case cq.wake <- struct{}{}:
			default:
			}
			return nil
		}
		if closed {
			return ErrCQClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var lent chan struct{}
		if sole == nil && wanted != nil {
			wanted.role.wanted.Add(-1) // the CQ became shared
			wanted = nil
		}
		if sole != nil && cq == sole.cfg.SendCQ && sole.sendCQBusy() {
			sole = nil // wait the ordinary way (see sendCQBusy)
		}
		if sole != nil {
			if wanted != sole {
				if wanted != nil {
					wanted.role.wanted.Add(-1)
				}
				wanted = sole
				sole.role.wanted.Add(1)
			}
			if sole.borrowRx(ctx, cq) {
				continue
			}
			sole.role.recent.Store(true)
			lent = sole.role.lent
		}
		select {
		case <-cq.wake:
		case <-lent:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Arm requests one notification on the CQ's event channel for the next
// completion (solicitedOnly false) or the next solicited or error completion
// (solicitedOnly true). Completions already queued do not fire it.
func (cq *CQ) Arm(solicitedOnly bool) {
	cq.mu.Lock()
	if solicitedOnly {
		if cq.armed != armedNext {
			cq.armed = armedSolicited
		}
	} else {
		cq.armed = armedNext
	}
	cq.mu.Unlock()
}

// Close marks the CQ closed and wakes its waiters. Completions still queued
// can be polled.
func (cq *CQ) Close() {
	cq.mu.Lock()
	cq.closed = true
	sole := cq.soleLocked()
	cq.mu.Unlock()
	select {
	case cq.wake <- struct{}{}:
	default:
	}
	if sole != nil {
		sole.interruptPoll() // a waiter may be reading the socket
	}
}
