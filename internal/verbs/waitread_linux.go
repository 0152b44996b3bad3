//go:build linux && !iwarp_portable

package verbs

import (
	"context"
	"errors"
	"os"
	"time"
)

// A goroutine that waits for a completion reads the socket itself. With a
// poller, Ready hands what arrives to the waiting goroutine through the
// CQ or the Waiter: one more goroutine between the octets and the
// application than a blocking read has. A waiter that finds the receive
// token free takes it instead and reads the QP's socket without blocking,
// parking in the runtime's network poller on the socket (as a goroutine
// blocked in net.Conn.Read does) until what it waits for is there.
//
// Nothing depends on the waiter for progress: a completion another
// goroutine hands over (the transmit path's, a timer's, another QP's on
// the same CQ) interrupts its park (interruptReader: a read deadline in
// the past, which the runtime's poller acts on at once), and so does the
// end of its context; on leaving it releases the token and re-arms the
// socket, so octets that arrived meanwhile fire Ready as usual. A read
// deadline is used by nothing else: the other readers make raw system
// calls.

// aLongTimeAgo is a read deadline in the past: it ends a park at once.
var aLongTimeAgo = time.Unix(1, 0)

// waitReading waits for w's completion (w non-nil) or for cq to hold a
// completion, reading q's socket while it waits. It reports false,
// having done nothing, when it cannot read here (no poller, the token is
// held, the Core wants no input): the caller then waits as usual. After
// true, what it waited for is there, or ctx ended (its error), or the
// socket failed (the QP's teardown delivers the completions).
func (q *QP) waitReading(ctx context.Context, w *Waiter, cq *CQ) (bool, error) {
	// The Handle first: Start stores it after q.rc, so a Handle seen
	// here orders the read of q.rc after Start's write.
	h := q.hp.Load()
	if h == nil || q.rc == nil || q.rxStop.Load() {
		return false, nil
	}
	if q.txTok.Load() {
		// A transmission is under way (a transmit goroutine writes to a
		// full socket): what completes next most likely comes from it,
		// not from the socket, and each completion would have to
		// interrupt the park. Wait as usual.
		return false, nil
	}
	q.mu.Lock()
	busy := q.txWantedLocked() || q.txOut
	q.mu.Unlock()
	if busy {
		return false, nil // the same: the Core has more to send
	}
	if !q.rxTok.CompareAndSwap(false, true) {
		return false, nil
	}
	// The socket stays armed until the waiter is about to park
	// (rdReadable disarms it then): a wait that finds its completion
	// already readable makes no epoll_ctl at all.
	q.rdDisarmed = false
	q.rdWaiter, q.rdCQ = w, cq
	// readerWaiting before the context is looked at: an end of ctx from
	// now on interrupts the park, one before it is seen below.
	q.rdMu.Lock()
	q.readerWaiting.Store(true)
	q.rdMu.Unlock()
	q.watchCtx(ctx)
	var err error
	for {
		if q.rdReady() {
			break
		}
		if err = ctx.Err(); err != nil {
			break
		}
		q.rdActs = 0
		rerr := q.rc.Read(q.rdFn)
		q.actSelf(q.rdActs)
		if rerr == nil {
			if q.rxStop.Load() {
				break
			}
			continue
		}
		if errors.Is(rerr, os.ErrDeadlineExceeded) {
			q.clearDeadline()
			if q.rdReady() {
				break
			}
			if err = ctx.Err(); err != nil {
				break
			}
			continue // a completion for someone else, or spurious
		}
		q.readFailed(rerr)
		break
	}
	// The deadline is in the past only while a waiter reads (rdMu): the
	// poller's reads go through the same descriptor and would fail.
	q.rdMu.Lock()
	q.readerWaiting.Store(false)
	if q.rdPast {
		q.rdPast = false
		_ = q.nc.SetReadDeadline(time.Time{})
	}
	q.rdMu.Unlock()
	q.rdWaiter, q.rdCQ = nil, nil
	q.rxRelease(q.rdDisarmed)
	return true, err
}

// rdReady reports whether what the reading waiter waits for is there.
func (q *QP) rdReady() bool {
	if w := q.rdWaiter; w != nil {
		return len(w.c) > 0
	}
	cq := q.rdCQ
	cq.mu.Lock()
	ready := cq.n > 0 || cq.closed
	cq.mu.Unlock()
	return ready
}

// watchCtx makes the end of ctx interrupt the reading waiter. The
// registration is kept for the next wait with the same context, so that a
// caller reusing one context allocates nothing per wait; a context that
// never ends needs none.
func (q *QP) watchCtx(ctx context.Context) {
	if ctx.Done() == nil {
		return
	}
	q.rdMu.Lock()
	defer q.rdMu.Unlock()
	if ctx == q.rdCtx || q.rdClosed {
		return // a closed QP's waiter ends with the connection
	}
	if q.rdStop != nil {
		q.rdStop()
	}
	q.rdCtx = ctx
	q.rdStop = context.AfterFunc(ctx, q.interruptFn)
}

// unwatchCtx drops the kept context registration for good (the QP's
// teardown).
func (q *QP) unwatchCtx() {
	q.rdMu.Lock()
	defer q.rdMu.Unlock()
	q.rdClosed = true
	if q.rdStop != nil {
		q.rdStop()
		q.rdStop, q.rdCtx = nil, nil
	}
}

// interruptReader ends the reading waiter's park, if there is one: it
// looks at what it waits for again.
func (q *QP) interruptReader() {
	if !q.readerWaiting.Load() {
		return
	}
	q.rdMu.Lock()
	if q.readerWaiting.Load() && !q.rdPast {
		q.rdPast = true
		_ = q.nc.SetReadDeadline(aLongTimeAgo)
	}
	q.rdMu.Unlock()
}

// clearDeadline takes back the deadline an interrupt set.
func (q *QP) clearDeadline() {
	q.rdMu.Lock()
	if q.rdPast {
		q.rdPast = false
		_ = q.nc.SetReadDeadline(time.Time{})
	}
	q.rdMu.Unlock()
}

// rdReadable is the reading waiter's RawConn.Read callback: it reads until
// what it waits for is there, the socket is empty (false: park), or the
// Core decided something that must be done outside the callback (true).
func (q *QP) rdReadable(fd uintptr) bool {
	for {
		if q.rdReady() {
			return true
		}
		a, stop, empty := q.readOnce(fd, true)
		a &^= actInterrupt // its own completions need not interrupt it
		q.rdActs |= a
		switch {
		case stop, a != 0:
			return true
		case empty:
			if q.rdReady() {
				return true
			}
			if !q.rdDisarmed {
				// About to park: the poller need not wake for the octets
				// this goroutine will read (advice: a Ready already on
				// its way finds the token taken and sets rxMissed). The
				// runtime's poller still reports octets that arrive
				// between the empty read and the park: the park then
				// ends at once.
				q.rdDisarmed = true
				_ = q.hp.Load().Disarm()
			}
			return false
		}
	}
}

// bindReader makes the reading waiter's method values once, so that a
// wait allocates nothing.
func (q *QP) bindReader() {
	q.rdFn, q.interruptFn = q.rdReadable, q.interruptReader
}
