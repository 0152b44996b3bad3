package verbs

import (
	"errors"
	"os"
	"time"

	"github.com/goiwarp/iwarp/internal/freelist"
	"github.com/goiwarp/iwarp/internal/poll"
)

// Transmitting. The holder of the transmit token is the only writer of the
// connection. Whoever gives the Core something to send (a poster, the
// receiver with a response, a drive) takes the token if it is free and
// writes Core.TxBufs with non-blocking writevs. When the socket is full the
// token passes to a transmit goroutine, which waits for room holding no
// pin and leaves when the Core has nothing more to send.

// txScratch is the transmit token holder's scratch: the iovecs of the
// write in progress. A holder takes one from txPool with the token and
// gives it back with the token, so that an idle QP holds none and a burst
// of many FPDUs grows a pooled one instead of the QP's.
type txScratch struct {
	iov [][]byte
	vec iovecs // the system call's form (tx_linux.go)
}

// txPool holds the scratch of QPs not transmitting; it retains up to 256.
var txPool = freelist.New(256, func() *txScratch { return new(txScratch) })

// takeTx is what a goroutine does after taking the transmit token.
func (q *QP) takeTx() { q.tx = txPool.Get() }

// releaseTx gives the transmit token back with its scratch.
func (q *QP) releaseTx() {
	clear(q.tx.iov)
	q.tx.iov = q.tx.iov[:0]
	txPool.Put(q.tx)
	q.tx = nil
	q.txTok.Store(false)
}

// kickTx transmits what the Core has, on the calling goroutine, unless
// another holds the transmit token: that one sees the work when it
// releases the token and looks again.
func (q *QP) kickTx() {
	for q.txTok.CompareAndSwap(false, true) {
		q.takeTx()
		if q.txPump() {
			return // the transmit goroutine holds the token now
		}
		q.releaseTx()
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
	if h == nil && (q.rc == nil || !rawIO) {
		q.dev.workers.run(q.txGoFn) // only blocking writes here
		return true
	}
	for {
		q.mu.Lock()
		if !q.txWantedLocked() {
			q.mu.Unlock()
			return false
		}
		q.tx.iov = q.core.TxBufs(q.tx.iov[:0])
		if len(q.tx.iov) == 0 {
			a := q.afterLocked()
			q.mu.Unlock()
			q.act(a &^ actTx)
			return false
		}
		q.txOut = true
		q.mu.Unlock()
		var n int
		var err error
		if h != nil {
			n, err = h.Writev(q.tx.iov)
		} else {
			n, err = q.txTry() // no Handle: through the RawConn
		}
		full := errors.Is(err, poll.ErrWouldBlock) || (err == nil && n < iovLen(q.tx.iov))
		clear(q.tx.iov)
		q.mu.Lock()
		q.txOut = false
		q.core.TxDone(n)
		q.noteTxLocked(n)
		if err != nil && !full {
			q.core.Fail(err)
		}
		a := q.afterLocked()
		q.mu.Unlock()
		q.act(a &^ actTx)
		switch {
		case full:
			q.dev.workers.run(q.txGoFn)
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
		q.releaseTx()
		q.mu.Lock()
		again := q.txWantedLocked()
		q.mu.Unlock()
		if !again || !q.txTok.CompareAndSwap(false, true) {
			return
		}
		q.takeTx()
	}
}

// txBlocking writes with blocking writes of the connection (no poller, no
// RawConn): one iovec (at most one FPDU's piece) per write, each ended by a
// write deadline of one operation-timeout period (writeTimed), so that the
// operation timeout sees progress while a slow peer reads, however slowly;
// the octets stay pinned during each write, which closing the connection
// ends.
func (q *QP) txBlocking() {
	for {
		q.mu.Lock()
		if !q.txWantedLocked() {
			q.mu.Unlock()
			return
		}
		q.tx.iov = q.core.TxBufs(q.tx.iov[:0])
		if len(q.tx.iov) == 0 {
			a := q.afterLocked()
			q.mu.Unlock()
			q.act(a &^ actTx)
			return
		}
		q.txOut = true
		q.timersLocked() // the write may wait on the peer: the timeout watches it
		q.mu.Unlock()
		piece := q.tx.iov[0]
		for _, b := range q.tx.iov {
			if len(b) > 0 {
				piece = b
				break
			}
		}
		n, err := q.writeTimed(piece)
		clear(q.tx.iov)
		q.mu.Lock()
		q.txOut = false
		q.core.TxDone(n) // a partial write is progress too
		q.noteTxLocked(n)
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

// writeTimed writes b with a blocking write. With an operation timeout,
// the write ends after one period of it (a write deadline) with what was
// written so far, which is not an error: the caller hands the rest back
// to the Core and writes it next, so a slow but steady reader is seen to
// make progress. A connection without deadlines writes b whole.
func (q *QP) writeTimed(b []byte) (int, error) {
	if q.cfg.OpTimeout <= 0 || q.nc.SetWriteDeadline(time.Now().Add(q.period())) != nil {
		return q.nc.Write(b)
	}
	n, err := q.nc.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = nil
	}
	return n, err
}

// iovLen is the number of octets of bufs.
func iovLen(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n
}
