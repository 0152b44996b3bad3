//go:build linux && !iwarp_portable

package verbs

import (
	"os"
	"syscall"
	"unsafe"

	"github.com/goiwarp/iwarp/internal/poll"
)

// maxIOV is Linux's IOV_MAX: the most slices one writev takes.
const maxIOV = 1024

// iovecs are a writev's arguments.
type iovecs []syscall.Iovec

// txRaw is the transmit goroutine's state for writing through the
// connection's RawConn: the callback, bound once, and what it found.
// Owned by the holder of the transmit token.
type txRaw struct {
	fn   func(fd uintptr) bool
	a    acts // what the callback's drives decided, for the caller to act on
	stop bool // nothing more to write, or the connection failed

	// txTry's callback, bound once, and its result.
	tryFn func(fd uintptr) bool
	n     int
	errno syscall.Errno
}

// txRawWait writes what the Core has, waiting for room in the socket
// between writes with the runtime's network poller (RawConn.Write with a
// callback that returns false after EAGAIN): each writev pins the octets
// it writes for that system call only, never across the wait. It reports
// false if it cannot be used (never, on Linux with a poller).
func (q *QP) txRawWait() bool {
	t := &q.txRaw
	if t.fn == nil {
		t.fn = q.txWritable
	}
	for {
		t.a, t.stop = 0, false
		err := q.rc.Write(t.fn)
		q.act(t.a &^ actTx)
		if err != nil {
			q.mu.Lock()
			q.core.Fail(err) // nothing if the QP is torn down already
			a := q.afterLocked()
			q.mu.Unlock()
			q.act(a &^ actTx)
			return true
		}
		if t.stop {
			return true
		}
	}
}

// txWritable is the RawConn.Write callback: it writes until the socket is
// full (false: wait for room) or the Core has nothing more (true). It
// returns true too when the Core asks for a half-close, a close or the end
// of the teardown, which the caller performs outside the fd's lock.
func (q *QP) txWritable(fd uintptr) bool {
	t := &q.txRaw
	for {
		q.mu.Lock()
		if !q.txWantedLocked() {
			q.mu.Unlock()
			t.stop = true
			return true
		}
		q.tx.iov = q.core.TxBufs(q.tx.iov[:0])
		if len(q.tx.iov) == 0 {
			t.a |= q.afterLocked()
			q.mu.Unlock()
			t.stop = true
			return true
		}
		q.txOut = true
		q.mu.Unlock()
		n, errno := writev(fd, q.tx.iov, &q.tx.vec)
		clear(q.tx.iov)
		q.mu.Lock()
		q.txOut = false
		q.core.TxDone(n)
		q.noteTxLocked(n)
		if errno != 0 && errno != syscall.EAGAIN {
			q.core.Fail(os.NewSyscallError("writev", errno))
		}
		a := q.afterLocked()
		q.mu.Unlock()
		t.a |= a
		switch {
		case a&^actTx != 0:
			return true
		case errno == syscall.EAGAIN:
			return false
		case errno != 0:
			t.stop = true
			return true
		}
	}
}

// writev makes one writev(2) of bufs (up to IOV_MAX of them) on fd,
// retried only when a signal interrupted it; vec is its scratch.
func writev(fd uintptr, bufs [][]byte, vec *iovecs) (int, syscall.Errno) {
	v := (*vec)[:0]
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if len(v) == maxIOV {
			break
		}
		e := syscall.Iovec{Base: &b[0]}
		e.SetLen(len(b))
		v = append(v, e)
	}
	*vec = v
	if len(v) == 0 {
		return 0, 0
	}
	for {
		n, _, e := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&v[0])), uintptr(len(v)))
		if e == syscall.EINTR {
			continue
		}
		clear(v)
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}

// txTry makes one non-blocking writev of the scratch's iovecs through the
// RawConn, for a QP without a poller Handle that reads with a goroutine
// (rxwait_linux.go). It returns ErrWouldBlock when the socket is full.
func (q *QP) txTry() (int, error) {
	t := &q.txRaw
	if t.tryFn == nil {
		t.tryFn = q.txTryWrite
	}
	if err := q.rc.Write(t.tryFn); err != nil {
		return 0, err
	}
	n, e := t.n, t.errno
	t.n, t.errno = 0, 0
	switch e {
	case 0:
		return n, nil
	case syscall.EAGAIN:
		return 0, poll.ErrWouldBlock
	}
	return 0, os.NewSyscallError("writev", e)
}

// txTryWrite is txTry's RawConn.Write callback: one writev, no wait.
func (q *QP) txTryWrite(fd uintptr) bool {
	q.txRaw.n, q.txRaw.errno = writev(fd, q.tx.iov, &q.tx.vec)
	return true
}
