package verbs

import (
	"errors"
	"io"

	"github.com/goiwarp/iwarp/internal/poll"
)

// Receiving. The holder of the receive token is the only reader of the
// connection. With a poller, Ready takes the token, reads without blocking
// into the Core's RxBuf until the socket is empty (or a budget), releases
// the token and re-arms; a busy connection gets a receive goroutine until
// its socket is empty. Without one, a receive goroutine holds the token for
// the QP's life and reads into a bounce buffer.

const (
	// rxBudget bounds the octets one Ready reads before the connection
	// gets a receive goroutine of its own: one bulk stream must not hold
	// up every other socket of the Device.
	rxBudget = 256 << 10
	// bounceSize is the receive goroutine's buffer without a poller.
	bounceSize = 32 << 10
)

// rxResult is how a run of non-blocking reads ended.
type rxResult uint8

const (
	rxIdle rxResult = iota // the socket is empty: arm it
	rxBusy                 // the budget ran out with octets still coming
	rxStop                 // the Core wants no more input, or the stream ended
)

// rxHandler is the QP as the poller's Handler.
type rxHandler QP

// Ready is poll.Handler's: the socket is readable.
func (h *rxHandler) Ready() {
	q := (*QP)(h)
	if q.hp.Load() == nil {
		return // a hang-up before Start stored the Handle: it arms next
	}
	// rxMissed before the token: a holder that gives the token back after
	// this compare-and-swap failed sees the flag and arms again.
	q.rxMissed.Store(true)
	if !q.rxTok.CompareAndSwap(false, true) {
		return // the holder re-arms when it releases the token
	}
	if q.rxPoll(rxBudget) == rxBusy {
		q.dev.workers.run(q.rxBulkFn)
		return
	}
	q.rxRelease(true)
}

// rxBulk is the receive goroutine of a busy connection: it holds the
// token, reads until the socket is empty, then releases and re-arms.
func (q *QP) rxBulk() {
	res := rxBusy
	for res == rxBusy {
		res = q.rxPoll(rxBudget)
	}
	q.rxRelease(true)
}

// rxRelease gives the receive token back and arms the socket, unless the
// Core wants no more input: bytes that arrived while it was held fire
// Ready at once, and a Ready that found the token taken relies on this.
// spent says whether the holder knows the one-shot arm to be used up (it
// came through Ready, or disarmed the socket itself); a holder that took
// the token while the socket was armed and left it so (a reading waiter
// that never parked) arms only if a Ready found the token taken
// meanwhile (rxMissed): the registration is armed otherwise, and the
// epoll_ctl is saved.
//
// Why nothing is lost: the socket is armed whenever the token is free,
// or is about to be by whoever spent the arm. A Ready sets rxMissed
// before its compare-and-swap on the token; if that fails, the swap came
// before this Store, so the Swap below, after it, sees the flag (all
// three are sequentially consistent). A flag left by a Ready of the next
// holder's tenure is taken here too, and the Arm made for it is one that
// holder would have made.
func (q *QP) rxRelease(spent bool) {
	q.rxTok.Store(false)
	h := q.hp.Load()
	if h == nil || q.rxStop.Load() {
		return
	}
	if q.rxMissed.Swap(false) {
		spent = true
	}
	if !spent {
		return
	}
	if err := h.Arm(); err != nil {
		q.mu.Lock()
		closing := q.connClosed
		q.mu.Unlock()
		if !closing {
			q.failWith(err) // the Device's poller was closed under the QP
		}
	}
}

// rxPoll reads without blocking into the Core's receive buffers until the
// socket is empty, the Core wants no more input, or budget octets were
// read. The caller holds the receive token.
func (q *QP) rxPoll(budget int) rxResult {
	h := q.hp.Load()
	for got := 0; got < budget; {
		q.mu.Lock()
		iov := q.core.RxBufs(q.rxIOV[:0])
		if len(iov) == 0 {
			q.rxStop.Store(true)
			a := q.afterLocked()
			q.mu.Unlock()
			q.act(a)
			return rxStop
		}
		q.rxIOV = iov
		q.rxOut = true
		q.mu.Unlock()
		var n int
		var err error
		if len(iov) == 1 {
			n, err = h.Read(iov[0])
		} else {
			n, err = h.Readv(iov)
		}
		want := 0
		for _, b := range iov {
			want += len(b)
		}
		q.mu.Lock()
		q.rxOut = false
		q.core.RxDone(n)
		clear(q.rxIOV)
		res := rxBusy
		switch {
		case err == nil && n < want, errors.Is(err, poll.ErrWouldBlock):
			res = rxIdle // a short read: the socket was empty
		case errors.Is(err, io.EOF):
			q.core.RxEOF(nil)
			res = rxStop
		case err != nil:
			q.core.RxEOF(err)
			res = rxStop
		}
		if n > 0 && q.hold {
			q.hold = false // the peer's first octet: sending may begin
		}
		if res == rxStop {
			q.rxStop.Store(true)
		}
		a := q.afterLocked()
		q.mu.Unlock()
		q.act(a)
		if res != rxBusy {
			return res
		}
		got += n
	}
	return rxBusy
}

// rxBlocking is the receive goroutine of a QP without a poller. It holds
// the receive token for good and reads into a bounce buffer, so that no
// pin is held across the blocking read; the octets are copied into the
// Core's buffers under the lock.
func (q *QP) rxBlocking() {
	buf := make([]byte, bounceSize)
	for {
		n, err := q.nc.Read(buf)
		q.mu.Lock()
		if n > 0 {
			q.hold = false
		}
		more := q.feedLocked(buf[:n])
		switch {
		case errors.Is(err, io.EOF):
			q.core.RxEOF(nil)
			more = false
		case err != nil:
			q.core.RxEOF(err)
			more = false
		}
		a := q.afterLocked()
		q.mu.Unlock()
		q.act(a)
		if !more {
			q.rxStop.Store(true)
			return
		}
	}
}
