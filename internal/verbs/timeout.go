package verbs

import (
	"time"

	"github.com/goiwarp/iwarp/rdma"
)

// Timers. The operation timeout watches Core.Progress while Core.Waiting
// reports that the QP waits on the peer: a time.AfterFunc that ticks every
// quarter of Config.OpTimeout, armed only while the Core waits (an idle QP
// has no timer running) and failing the QP when Progress has not moved for
// the whole timeout. The drain timer bounds the drain after a Terminate.

// opTimer is the operation timeout's state, guarded by QP.mu.
type opTimer struct {
	t     *time.Timer   // created at the first wait
	armed bool          // t is pending and will look again
	last  uint64        // Core.Progress at the previous tick
	still time.Duration // how long Progress has not moved while waiting
}

// period is how often the operation timeout looks at the Core.
func (q *QP) period() time.Duration { return max(q.cfg.OpTimeout/4, time.Millisecond) }

// timersLocked arms the operation timeout when the Core starts waiting on
// the peer, and the drain timer when a Terminate is being sent. QP.mu is
// held; nothing here blocks.
func (q *QP) timersLocked() {
	c := q.core
	if q.drain == nil && c.State() == rdma.StateTerminate && c.Waiting() {
		q.drain = time.AfterFunc(q.cfg.DrainTimeout, q.drainOver)
	}
	tm := &q.timer
	if q.cfg.OpTimeout <= 0 || tm.armed || !q.waitingLocked() {
		return
	}
	tm.armed, tm.last, tm.still = true, c.Progress(), 0
	if tm.t == nil {
		tm.t = time.AfterFunc(q.period(), q.opTick)
	} else {
		tm.t.Reset(q.period())
	}
}

// waitingLocked reports whether the QP waits on its peer: the Core does,
// or work is held for the peer's first octet (the MPA Responder's hold:
// anything posted meanwhile is held).
func (q *QP) waitingLocked() bool {
	return q.core.Waiting() || (q.hold && q.sqTail > 0)
}

// stopTimersLocked stops both timers for good (the QP is torn down).
func (q *QP) stopTimersLocked() {
	if q.timer.t != nil {
		q.timer.t.Stop()
		q.timer.armed = false
	}
	if q.drain != nil {
		q.drain.Stop()
	}
}

// opTick is the operation timeout's tick, on the timer's goroutine.
func (q *QP) opTick() {
	q.mu.Lock()
	tm, c := &q.timer, q.core
	if !tm.armed || q.finished {
		q.mu.Unlock()
		return
	}
	if !q.waitingLocked() {
		tm.armed = false // armed again when the Core next waits
		q.mu.Unlock()
		return
	}
	p := q.period()
	if cur := c.Progress(); cur != tm.last {
		tm.last, tm.still = cur, 0
	} else if tm.still += p; tm.still >= q.cfg.OpTimeout {
		tm.armed = false
		c.Fail(ErrPeerStalled)
		a := q.afterLocked()
		q.mu.Unlock()
		q.act(a)
		return
	}
	tm.t.Reset(p)
	q.mu.Unlock()
}

// drainOver ends the drain after a Terminate: the QP is closed whether the
// peer closed its side or not.
func (q *QP) drainOver() {
	q.mu.Lock()
	if q.finished {
		q.mu.Unlock()
		return
	}
	q.core.Close()
	a := q.afterLocked()
	q.mu.Unlock()
	q.act(a)
}
