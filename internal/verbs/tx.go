package verbs

import (
	"errors"
	"net"

	"github.com/goiwarp/iwarp/internal/poll"
)

// Transmitting. The holder of the transmit token is the only writer of the
// connection. Whoever gives the Core something to send (a poster, the
// receiver with a response, a drive) takes the token if it is free and
// writes Core.TxBufs with non-blocking writevs. When the socket is full the
// token passes to a transmit goroutine, which waits for room holding no
// pin and leaves when the Core has nothing more to send.

// txChunk bounds one blocking write of the transmit goroutine of a QP
// without a poller, so that the operation timeout sees progress while a
// slow peer reads.
const txChunk = 256 << 10

// kickTx transmits what the Core has, on the calling goroutine, unless
// another holds the transmit token: that one sees the work when it
// releases the token and looks again.
func (q *QP) kickTx() {
	for q.txTok.CompareAndSwap(false, true) {
		if q.txPump() {
			return // the transmit goroutine holds the token now
		}
		q.txTok.Store(false)
		q.mu.Lock()
		again := q.txWantedLocked()
		q.mu.Unlock()
		if !again {
			return
		}
	}
}

// txPump writes what the Core has without blocking, holding the transmit
// token. It reports true if it handed the token to a transmit goroutine
// (the socket is full, or there is no poller to write without blocking).
func (q *QP) txPump() bool {
	h := q.hp.Load()
	if h == nil {
		go q.txGoroutine()
		return true
	}
	for {
		q.mu.Lock()
		if !q.txWantedLocked() {
			q.mu.Unlock()
			return false
		}
		q.iov = q.core.TxBufs(q.iov[:0])
		if len(q.iov) == 0 {
			a := q.afterLocked()
			q.mu.Unlock()
			q.act(a &^ actTx)
			return false
		}
		q.txOut = true
		q.mu.Unlock()
		n, err := h.Writev(q.iov)
		full := errors.Is(err, poll.ErrWouldBlock) || (err == nil && n < iovLen(q.iov))
		clear(q.iov)
		q.mu.Lock()
		q.txOut = false
		q.core.TxDone(n)
		if err != nil && !full {
			q.core.Fail(err)
		}
		a := q.afterLocked()
		q.mu.Unlock()
		q.act(a &^ actTx)
		switch {
		case full:
			go q.txGoroutine()
			return true
		case err != nil:
			return false
		}
	}
}

// txGoroutine is the transmit goroutine: it holds the token, writes until
// the Core has nothing more to send, releases the token and looks again.
func (q *QP) txGoroutine() {
	for {
		if q.rc == nil || !q.txRawWait() {
			q.txBlocking()
		}
		q.shrinkTx()
		q.txTok.Store(false)
		q.mu.Lock()
		again := q.txWantedLocked()
		q.mu.Unlock()
		if !again || !q.txTok.CompareAndSwap(false, true) {
			return
		}
	}
}

// txBlocking writes with blocking writes of the connection (no poller):
// the octets stay pinned during each write, which closing the connection
// ends.
func (q *QP) txBlocking() {
	var nb net.Buffers
	for {
		q.mu.Lock()
		if !q.txWantedLocked() {
			q.mu.Unlock()
			return
		}
		q.iov = q.core.TxBufs(q.iov[:0])
		if len(q.iov) == 0 {
			a := q.afterLocked()
			q.mu.Unlock()
			q.act(a &^ actTx)
			return
		}
		q.txOut = true
		q.mu.Unlock()
		nb = appendChunk(nb[:0], q.iov, txChunk)
		n, err := nb.WriteTo(q.nc)
		clear(q.iov)
		q.mu.Lock()
		q.txOut = false
		q.core.TxDone(int(n))
		if err != nil {
			q.core.Fail(err)
		}
		a := q.afterLocked()
		q.mu.Unlock()
		q.act(a &^ actTx)
		if err != nil {
			return
		}
	}
}

// appendChunk appends to dst the first max octets of bufs.
func appendChunk(dst net.Buffers, bufs [][]byte, max int) net.Buffers {
	for _, b := range bufs {
		if len(b) >= max {
			return append(dst, b[:max])
		}
		dst = append(dst, b)
		max -= len(b)
	}
	return dst
}

// iovLen is the number of octets of bufs.
func iovLen(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n
}

// shrinkTx drops the transmit scratch a burst grew, so that an idle QP
// holds little memory.
func (q *QP) shrinkTx() {
	if cap(q.iov) > 64 {
		q.iov = nil
	}
	q.txRaw.shrink()
}
