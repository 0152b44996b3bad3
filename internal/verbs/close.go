package verbs

import (
	"context"
	"time"

	"github.com/goiwarp/iwarp/internal/rdmap"
)

// Teardown. Close and Disconnect are bounded whatever the peer does:
// closing the connection ends every system call on it, so the token
// holders return, hand their buffers back to the Core and deliver the
// flush; nothing waits on the peer.

// Close tears the QP down at once: the connection is closed without a
// Terminate (the peer sees it end) and every outstanding work request
// completes as flushed, in order. It returns once that is done and gives
// the QP's reservations back to its CQs. Close may be called more than
// once and concurrently, and on a QP that never started.
func (q *QP) Close() error {
	q.mu.Lock()
	var a acts
	switch {
	case q.core != nil:
		q.core.Close() // keeps the first error
		a = q.afterLocked()
	case !q.finished:
		q.idleErr = rdmap.ErrLocallyClosed
		a = q.finishLocked() // no OnDone: it never was connected
	}
	q.mu.Unlock()
	q.act(a)
	<-q.done // bounded: the connection is closed, the holders' calls return
	if h := q.hp.Load(); h != nil {
		_ = h.Close()
		q.dev.untrack(q)
	}
	q.releaseOnce.Do(q.unreserve)
	return nil
}

// unreserve gives the QP's reservations back to its CQs.
func (q *QP) unreserve() {
	q.unwatchCtx()
	q.cfg.SendCQ.leave(q)
	q.cfg.SendCQ.unreserve(q.cfg.SQDepth)
	if q.cfg.SRQ == nil {
		q.cfg.RecvCQ.leave(q)
		q.cfg.RecvCQ.unreserve(q.cfg.RQDepth)
	}
}

// Disconnect closes the QP in order: no new work is accepted, the work
// already posted is transmitted and completes (Reads included), the peer's
// requests are answered, then the connection is half-closed and, once the
// peer has closed its side too, torn down; receives still posted complete
// as flushed. A peer that does not close its side within the operation
// timeout fails the QP with ErrPeerStalled. Without an operation timeout
// (Config.OpTimeout 0 or less) the orderly phase is bounded by the drain
// timeout instead (Config.DrainTimeout, 2 s by default): once it is over
// the QP fails with ErrDisconnectTimeout and is closed at once, whatever
// the peer does. In either case Disconnect returns nil once the QP is torn
// down, and QP.Err tells why. In TERMINATE it waits for the drain. If ctx
// ends first the QP is closed at once (Close) and ctx's error returned. A
// QP that never started is closed.
func (q *QP) Disconnect(ctx context.Context) error {
	q.mu.Lock()
	if q.core == nil {
		q.mu.Unlock()
		return q.Close()
	}
	q.core.Disconnect()
	a := q.afterLocked()
	q.mu.Unlock()
	q.act(a)
	var over <-chan time.Time
	if q.cfg.OpTimeout <= 0 {
		t := time.NewTimer(q.cfg.DrainTimeout)
		defer t.Stop()
		over = t.C
	}
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		_ = q.Close()
		return ctx.Err()
	case <-over:
		q.failWith(ErrDisconnectTimeout) // keeps an error the QP already had
		return q.Close()
	}
}
