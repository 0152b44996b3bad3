package verbs

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// errWaiterBusy: PostWait was given a Waiter whose previous completion has
// not been received.
var errWaiterBusy = errors.New("the waiter still awaits a completion")

// Waiter receives the completion of one send work request at a time,
// posted with PostWait, instead of the send CQ: what the blocking
// convenience calls wait on.
type Waiter struct {
	c chan rdmap.Completion // room for the one completion it awaits
	// busy: posted, its completion not yet received by Wait.
	busy atomic.Bool
}

// NewWaiter returns an idle Waiter.
func NewWaiter() *Waiter { return &Waiter{c: make(chan rdmap.Completion, 1)} }

// Wait returns the completion of the work request posted with the Waiter,
// or ctx's error if ctx ends first (the work request then stays in flight:
// its completion comes to the Waiter later, and a later Wait returns it).
func (w *Waiter) Wait(ctx context.Context) (rdmap.Completion, error) {
	select {
	case c := <-w.c:
		w.busy.Store(false)
		return c, nil
	case <-ctx.Done():
		return rdmap.Completion{}, ctx.Err()
	}
}

// WaitFor is w.Wait for a work request posted on q with PostWait: while
// the completion is not there it reads q's socket itself when it can
// (see waitReading), so that a response is handed to the caller without a
// hop through the poller.
func (q *QP) WaitFor(ctx context.Context, w *Waiter) (rdmap.Completion, error) {
	if len(w.c) == 0 {
		if ok, err := q.waitReading(ctx, w, nil); ok && err != nil {
			return rdmap.Completion{}, err
		}
	}
	return w.Wait(ctx)
}

// PostWait posts one send work request whose completion goes to w instead
// of the send CQ; the request is signaled whatever its flags. The slot is
// freed when the completion is delivered. w must be idle: its previous
// completion received.
func (q *QP) PostWait(wr rdmap.SendWR, w *Waiter) error {
	if !w.busy.CompareAndSwap(false, true) {
		return errWaiterBusy
	}
	wr.Flags |= rdma.Signaled
	one := [1]rdmap.SendWR{wr}
	q.mu.Lock()
	if q.core == nil {
		err := q.idleErrLocked()
		q.mu.Unlock()
		w.busy.Store(false)
		return err
	}
	slot := q.sqTail
	n, tx, err := q.postLocked(one[:])
	if n == 1 {
		if q.waiters == nil {
			q.waiters = make([]*Waiter, q.cfg.SQDepth)
		}
		q.waiters[slot%uint64(len(q.waiters))] = w
	}
	q.mu.Unlock()
	if err != nil {
		w.busy.Store(false)
		return err
	}
	if tx {
		q.kickTx()
	}
	return nil
}

// Do posts wr and waits for its completion, whatever its Signaled flag.
// If ctx ends first it returns ctx's error and the work request stays in
// flight: its buffers belong to the QP until it completes (any later
// completion of the send queue, or Done, proves it has).
func (q *QP) Do(ctx context.Context, wr rdmap.SendWR) (rdmap.Completion, error) {
	w := q.getWaiter()
	if err := q.PostWait(wr, w); err != nil {
		q.putWaiter(w)
		return rdmap.Completion{}, err
	}
	c, err := q.WaitFor(ctx, w)
	if err != nil {
		return c, err // w is left to its completion, not reused
	}
	q.putWaiter(w)
	return c, nil
}

// getWaiter returns an idle Waiter of the QP's pool, or a new one.
func (q *QP) getWaiter() *Waiter {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.wfree); n > 0 {
		w := q.wfree[n-1]
		q.wfree = q.wfree[:n-1]
		return w
	}
	return NewWaiter()
}

// putWaiter returns an idle Waiter to the pool.
func (q *QP) putWaiter(w *Waiter) {
	q.mu.Lock()
	q.wfree = append(q.wfree, w)
	q.mu.Unlock()
}
