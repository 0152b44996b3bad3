package engine

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The receive role.
//
// One goroutine at a time holds the receive role and is the only user of
// the fpdu Reader and of the rx fields. Normally it is the QP's receive
// goroutine. A goroutine blocked in a wait the receive path will end (a
// blocking Read or atomic waiting for the peer's response; CQ.Wait on a CQ
// that only this QP feeds, unless signaled Sends or Writes are in flight
// on it) may borrow the role and read the socket itself: the runtime's
// network poller then wakes the waiter directly, as it wakes a raw TCP
// reader, instead of waking the receive goroutine, which would then have
// to wake the waiter (a second OS thread to wake per message; see
// docs/performance.md, "Latency").
//
// The receive goroutine lends the role at an FPDU boundary with nothing
// staged, after two short FPDUs in a row (rxLoop), when a waiter has asked
// for it (wanted, recent) and the QP is healthy; the role is then free,
// and the receive goroutine sleeps. A waiter takes a free role, reads and
// processes FPDUs it has whole until what it waits for is there, and
// leaves the role free again. While the role is free nobody reads the
// socket: the receive goroutine looks every backstop period and takes a
// free role back, and takes it back at once when kicked (the connection
// is closed, the QP fails, a waiter will not borrow). A borrower never
// tears the QP down: on any error, and on part of an FPDU, it hands the
// role (and the error) back to the receive goroutine, which handles them
// as it handles its own.
//
// A borrower waits for readability in fpdu.Reader.Fill, which a read
// deadline can interrupt without harm: a completion pushed by another
// goroutine, the end of the waiter's context, CQ.Close, a second QP
// attaching to the CQ, or the QP's failure sets a deadline in the past to
// wake it (interruptPoll), and endPoll clears it.

const (
	roleLoop     int32 = iota // the receive goroutine holds the role
	roleFree                  // nobody holds it; the receive goroutine sleeps
	roleBorrowed              // a waiter holds it
)

// rxBackstop is how often the receive goroutine, while it lent its role,
// looks whether the role is free and takes it back if so: the longest
// that received octets wait unread once no goroutine waits. Each look
// wakes the process, which costs a ping-pong's round trips more the more
// often it happens (1 ms made them 50 % slower on the project's machine,
// 10 ms about 3 %; docs/performance.md, "Latency").
const rxBackstop = 10 * time.Millisecond

// aLongTimeAgo is a read deadline in the past: it wakes a waiting read.
var aLongTimeAgo = time.Unix(1, 0)

type rxRole struct {
	state  atomic.Int32
	wanted atomic.Int32 // waiters that would borrow the role
	// recent: a waiter had to wait the ordinary way since the role was
	// last lent; it may already be gone when the receive goroutine next
	// looks at wanted (it woke up first), but is likely to wait again.
	recent atomic.Bool
	// noLend: the QP left RTS (or is closing): the role stays with the
	// receive goroutine from its next boundary on.
	noLend atomic.Bool
	kick   chan struct{} // wakes the sleeping receive goroutine
	// lent wakes one waiter blocked the ordinary way when the role became
	// free, so that it borrows it (a stale token only costs a look).
	lent  chan struct{}
	timer *time.Timer // the backstop (receive goroutine only)
	// handErr is an error a borrower met, for the receive goroutine:
	// written before state goes to roleLoop.
	handErr error

	// partials counts borrowings given back for part of an FPDU (tests).
	partials atomic.Uint64

	// polling: the borrower waits in Fill and may be interrupted. mu
	// orders setting and clearing the interrupting deadline.
	polling     atomic.Bool
	mu          sync.Mutex
	interrupted bool // guarded by mu
	// The waiter's context, registered once per context (guarded by mu):
	// its end interrupts the borrower.
	ctxDone <-chan struct{}
	ctxStop func() bool
}

func (ro *rxRole) init() {
	ro.kick = make(chan struct{}, 1)
	ro.lent = make(chan struct{}, 1)
}

// signalLent wakes one waiter blocked the ordinary way, if any.
func (ro *rxRole) signalLent() {
	select {
	case ro.lent <- struct{}{}:
	default:
	}
}

// kickRx wakes the receive goroutine if it sleeps, so that it takes the
// role back if it is free (the connection was closed, the QP failed).
func (qp *QP) kickRx() {
	qp.role.noLend.Store(true)
	select {
	case qp.role.kick <- struct{}{}:
	default:
	}
	qp.interruptPoll()
}

// closeConn closes the connection and makes sure a receive goroutine that
// lent its role notices.
func (qp *QP) closeConn() {
	_ = qp.conn.Close()
	qp.kickRx()
}

// interruptPoll wakes a borrower waiting for readability. It never blocks
// for long and may be called from anywhere.
func (qp *QP) interruptPoll() {
	ro := &qp.role
	if !ro.polling.Load() {
		return
	}
	ro.mu.Lock()
	if ro.polling.Load() && !ro.interrupted {
		ro.interrupted = true
		_ = qp.conn.NetConn().SetReadDeadline(aLongTimeAgo)
	}
	ro.mu.Unlock()
}

// lendRx is called by the receive goroutine at an FPDU boundary with
// nothing staged: if a waiter wants the role, it lends it and sleeps until
// it holds the role again. It reports whether it lent it.
func (qp *QP) lendRx() bool {
	ro := &qp.role
	if ro.noLend.Load() || (ro.wanted.Load() == 0 && !ro.recent.Load()) {
		return false
	}
	ro.recent.Store(false)
	ro.state.Store(roleFree)
	ro.signalLent()
	if ro.timer == nil {
		ro.timer = time.NewTimer(rxBackstop)
	} else {
		ro.timer.Reset(rxBackstop)
	}
	for {
		select {
		case <-ro.kick:
		case <-ro.timer.C:
		}
		// Handed back, or free (nobody reads): the role is ours again.
		if ro.state.Load() == roleLoop || ro.state.CompareAndSwap(roleFree, roleLoop) {
			ro.timer.Stop()
			return true
		}
		ro.timer.Reset(rxBackstop) // borrowed: look again later
	}
}

func countByWaiter(c *Counters) { c.FPDUsByWaiters.Add(1) }

// rxReady is what a borrower waits for.
type rxReady interface{ rxReady() bool }

// waiterReady: a blocking call's completion channel holds its completion.
type waiterReady chan CQE

func (w waiterReady) rxReady() bool { return len(w) > 0 }

// borrowRx runs the receive path on the calling goroutine until ready
// reports true or ctx ends, if the role is free. It reports false when it
// did not get the role or had to give it back (the caller then waits the
// ordinary way, with wanted counted, for the receive goroutine to do the
// work); true when the caller should look again (ready, or ctx ended).
func (qp *QP) borrowRx(ctx context.Context, ready rxReady) bool {
	ro := &qp.role
	if ro.noLend.Load() || ro.state.Load() != roleFree {
		return false
	}
	if !ro.state.CompareAndSwap(roleFree, roleBorrowed) {
		return false
	}
	if done := ctx.Done(); done != nil {
		qp.watchCtx(ctx, done)
	}
	r := qp.conn.Reader()
	for {
		if !r.Staged() {
			if r.Buffered() > 0 {
				// Part of an FPDU: reading the rest could block where
				// nothing can interrupt it. The receive goroutine does it.
				ro.partials.Add(1)
				return qp.handBackRx()
			}
			ro.polling.Store(true)
			if ready.rxReady() || ctx.Err() != nil || ro.noLend.Load() {
				qp.endPoll()
				return qp.giveBackRx(nil)
			}
			err := r.Fill()
			qp.endPoll()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue // interrupted: look again
			}
			if err != nil {
				return qp.giveBackRx(err)
			}
			continue
		}
		if _, err := qp.rxOne(r); err != nil {
			return qp.giveBackRx(err)
		}
		qp.count(countByWaiter)
		if ready.rxReady() {
			return qp.giveBackRx(nil)
		}
	}
}

// endPoll ends a borrower's interruptible wait: no interruption can come
// any more, and a read deadline an interruption set (whether or not it
// woke the wait) is cleared.
func (qp *QP) endPoll() {
	ro := &qp.role
	ro.mu.Lock()
	ro.polling.Store(false)
	if ro.interrupted {
		ro.interrupted = false
		_ = qp.conn.NetConn().SetReadDeadline(time.Time{})
	}
	ro.mu.Unlock()
}

// handBackRx gives the role back to the receive goroutine, woken, and
// tells the borrower to wait the ordinary way.
func (qp *QP) handBackRx() bool {
	ro := &qp.role
	ro.state.Store(roleLoop)
	select {
	case ro.kick <- struct{}{}:
	default:
	}
	return false
}

// sendCQBusy reports that signaled WRs the transmit path completes are
// in flight: a waiter on the send CQ would be woken for their completions
// with a read deadline, which costs the runtime an allocation, so it waits
// the ordinary way instead. If the role is free meanwhile, the receive
// goroutine is told to take it back, since this waiter will not read.
func (qp *QP) sendCQBusy() bool {
	qp.mu.Lock()
	busy := qp.txSignaled > 0
	qp.mu.Unlock()
	if busy && qp.role.state.Load() == roleFree {
		select {
		case qp.role.kick <- struct{}{}:
		default:
		}
	}
	return busy
}

// giveBackRx ends a borrowing: the role becomes free, or, after an error or
// once the QP is failing, goes back to the receive goroutine, woken.
func (qp *QP) giveBackRx(err error) bool {
	ro := &qp.role
	if err == nil && !ro.noLend.Load() {
		ro.state.Store(roleFree)
		if ro.wanted.Load() > 1 { // another waiter is blocked: let it borrow
			ro.signalLent()
		}
		return true
	}
	ro.handErr = err
	qp.handBackRx()
	return err == nil
}

// watchCtx makes the end of ctx (whose Done channel is done) interrupt a
// borrower. A registration is kept for the next waits with the same
// context, so that a loop of waits does not allocate. Only a borrower
// calls it, so never after teardown (which holds the role).
func (qp *QP) watchCtx(ctx context.Context, done <-chan struct{}) {
	ro := &qp.role
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.ctxDone == done {
		return
	}
	if ro.ctxStop != nil {
		ro.ctxStop()
	}
	ro.ctxDone = done
	ro.ctxStop = context.AfterFunc(ctx, qp.interruptPoll)
}

// stopRxRole ends the context registration (teardown, on the receive
// goroutine holding the role: no borrower can register again).
func (qp *QP) stopRxRole() {
	ro := &qp.role
	ro.mu.Lock()
	if ro.ctxStop != nil {
		ro.ctxStop()
		ro.ctxStop, ro.ctxDone = nil, nil
	}
	ro.mu.Unlock()
}

// Await waits for the completion of a work request posted with Waiter w.
// With byPeer (a Read or an atomic, which the peer's response completes)
// it borrows the receive role meanwhile; otherwise the transmit path
// completes the request and it simply waits.
func (qp *QP) Await(ctx context.Context, w chan CQE, byPeer bool) (CQE, error) {
	if !byPeer {
		select {
		case c := <-w:
			return c, nil
		case <-ctx.Done():
			return CQE{}, ctx.Err()
		}
	}
	select {
	case c := <-w:
		return c, nil
	default:
	}
	ro := &qp.role
	ro.wanted.Add(1)
	defer ro.wanted.Add(-1)
	for {
		if ctx.Err() == nil && qp.borrowRx(ctx, waiterReady(w)) {
			select {
			case c := <-w:
				return c, nil
			default:
			}
			if err := ctx.Err(); err != nil {
				return CQE{}, err
			}
			continue
		}
		ro.recent.Store(true)
		select {
		case c := <-w:
			return c, nil
		case <-ro.lent:
		case <-ctx.Done():
			return CQE{}, ctx.Err()
		}
	}
}
