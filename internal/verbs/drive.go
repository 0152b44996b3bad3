package verbs

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// Driving the Core. After every call into the Core, the caller (holding
// QP.mu) runs afterLocked, which hands the completions out and decides
// what the Core asks for; act then does it outside the lock, because the
// system calls (half-close, close, writev) must not run under QP.mu.

// acts are what afterLocked decided and act performs.
type acts uint16

const (
	actTx        acts = 1 << iota // the Core has something to transmit
	actHalfClose                  // shutdown(SHUT_WR): the Terminate or the orderly close is written
	actClose                      // close the connection: it ends every system call on it
	actDone                       // the QP was torn down: call OnDone
	actWakeSend                   // completions were added to the send CQ: wake its waiters
	actWakeRecv                   // the same for the receive CQ
	actFireSend                   // an addition met the send CQ's arm: notify its event channel
	actFireRecv                   // the same for the receive CQ
	actInterrupt                  // a Waiter got its completion: interrupt a reading waiter
)

// afterLocked looks at the Core after a call: completions go to their CQ
// (or Waiter), the shutdown the Core asks for is decided once, the
// operation timeout and the drain timer are armed, and the teardown is
// finished once nothing of a flushed WR's memory is in use. QP.mu is held.
func (q *QP) afterLocked() acts {
	c := q.core
	var a acts
	if c.WantClose() && c.State() != rdma.StateError {
		c.Close() // the peer's Terminate: Close keeps its error
	}
	a |= q.deliverLocked()
	if q.txWantedLocked() {
		a |= actTx
	}
	if !q.halfClosed && c.WantHalfClose() {
		q.halfClosed = true
		a |= actHalfClose
	}
	if c.State() == rdma.StateError {
		if !q.connClosed {
			q.connClosed = true
			a |= actClose
		}
		if !q.finished && !q.rxOut && !q.txOut {
			a |= q.finishLocked() | actDone
		}
		return a
	}
	q.timersLocked()
	return a
}

// txWantedLocked reports whether the Core has something to transmit that
// may go now.
func (q *QP) txWantedLocked() bool {
	return q.core != nil && !q.hold && q.core.WantTx()
}

// deliverLocked moves the Core's ready completions to their CQs, and a
// send completion whose WR was posted with a Waiter to that Waiter. It
// returns the CQ wake-ups for act, which does them outside the lock, once
// per batch: a waiter finds every completion of a read at once.
func (q *QP) deliverLocked() acts {
	q.comps = q.core.Poll(q.comps[:0])
	var a acts
	for i := range q.comps {
		c := &q.comps[i]
		if c.Queue == rdmap.RecvQueue {
			a |= q.addLocked(q.cfg.RecvCQ, c, actWakeRecv, actFireRecv)
			continue
		}
		if k := c.Slot % uint64(q.cfg.SQDepth); q.waiters != nil && q.waiters[k] != nil {
			w := q.waiters[k]
			q.waiters[k] = nil
			w.c <- *c // it has room: one completion per post; never blocks
			q.core.ReleaseSend(c.Slot)
			a |= actInterrupt
			continue
		}
		a |= q.addLocked(q.cfg.SendCQ, c, actWakeSend, actFireSend)
	}
	clear(q.comps)
	return a
}

// addLocked adds c to cq and returns the wake-up (and the event
// notification, if the addition met the CQ's arm) act owes it.
func (q *QP) addLocked(cq *CQ, c *rdmap.Completion, wake, fire acts) acts {
	if cq.add(c, q) {
		return wake | fire
	}
	return wake
}

// finishLocked ends the teardown: the Core's flush was delivered (no
// buffer of a flushed WR is in use), the timers stop and Done closes. A QP
// that never started flushes the receives posted on its ring itself (a
// started one's Core flushed them, in order). It returns the CQ wake-ups
// act owes.
func (q *QP) finishLocked() acts {
	q.finished = true
	err := q.errLocked()
	var a acts
	if q.rq != nil && q.core == nil {
		for {
			wr, _, slot, ok := q.rq.Take()
			if !ok {
				break
			}
			c := rdmap.Completion{Queue: rdmap.RecvQueue, Slot: slot, Completion: rdma.Completion{
				ID: wr.ID, QPNum: q.num, Op: rdma.OpRecv, Status: rdma.StatusFlushed, Err: err}}
			a |= q.addLocked(q.cfg.RecvCQ, &c, actWakeRecv, actFireRecv)
		}
	}
	q.stopTimersLocked()
	close(q.done)
	return a
}

// act performs what afterLocked decided, outside QP.mu.
func (q *QP) act(a acts) { q.actAs(a, nil) }

// actSelf is act for the reading waiter of q (waitReading): the wake-ups
// its own completions cause do not interrupt it.
func (q *QP) actSelf(a acts) { q.actAs(a&^actInterrupt, q) }

// actAs is act; self is the reading waiter calling it, or nil.
func (q *QP) actAs(a acts, self *QP) {
	if a&actInterrupt != 0 {
		q.interruptReader()
	}
	if a&actWakeSend != 0 {
		q.cfg.SendCQ.notify(a&actFireSend != 0, self)
	}
	if a&actWakeRecv != 0 && (q.cfg.RecvCQ != q.cfg.SendCQ || a&actWakeSend == 0 || a&actFireRecv != 0) {
		q.cfg.RecvCQ.notify(a&actFireRecv != 0, self)
	}
	if a&actHalfClose != 0 {
		q.halfClose()
	}
	if a&actClose != 0 {
		_ = q.nc.Close() // every read, write and wait on it returns
	}
	if a&actTx != 0 {
		q.kickTx()
	}
	if a&actDone != 0 && q.cfg.OnDone != nil {
		q.cfg.OnDone(q)
	}
	if s := q.cfg.SRQ; s != nil {
		s.fireLimit()
	}
}

// halfClose closes the sending side of the connection; one that cannot be
// half-closed is closed.
func (q *QP) halfClose() {
	if cw, ok := q.nc.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	_ = q.nc.Close()
}

// feedLocked hands octets already read to the Core, copying them into its
// receive buffers, and reports whether the Core wants more input.
func (q *QP) feedLocked(b []byte) bool {
	for {
		dst := q.core.RxBuf()
		if dst == nil {
			return false
		}
		n := copy(dst, b)
		q.core.RxDone(n)
		if b = b[n:]; len(b) == 0 {
			return true
		}
	}
}

// failWith fails the QP with a local error (a system call failed) and
// tears it down.
func (q *QP) failWith(err error) {
	q.mu.Lock()
	q.core.Fail(err)
	a := q.afterLocked()
	q.mu.Unlock()
	q.act(a)
}

// drive runs afterLocked from a goroutine that made no Core call of its own
// (a wake-up, a timer).
func (q *QP) drive() {
	q.mu.Lock()
	var a acts
	if q.core != nil {
		a = q.afterLocked()
	}
	q.mu.Unlock()
	q.act(a)
}

// wake is the Core's Config.Wake: an invalidation a completion waits for
// has drained. It may run inside a Core call, under QP.mu or another QP's
// lock, so it only schedules a drive on a goroutine of its own (rare: one
// per invalidation a completion waited for).
func (q *QP) wake() {
	if q.wakeQueued.CompareAndSwap(false, true) {
		go func() {
			q.wakeQueued.Store(false)
			q.drive()
		}()
	}
}

// leaseHolder is the mem.Holder the Core's leases name: the QP.
type leaseHolder QP

// Revoke is mem.Holder's: an invalidation whose context ended revokes the
// leases this QP holds on r. The QP fails and its connection is closed,
// which ends a write in progress; it does not block (QP.mu is held only
// for bounded work, and closing a connection does not wait).
func (h *leaseHolder) Revoke(r *mem.Region) {
	q := (*QP)(h)
	q.mu.Lock()
	q.core.Revoke(r)
	a := q.afterLocked()
	q.mu.Unlock()
	q.act(a &^ actTx)
}
