//go:build linux && !iwarp_portable

package verbs

import (
	"os"
	"syscall"
)

// Reading with a goroutine per QP (a Device without a poller, on a
// connection with a descriptor): the goroutine waits in the runtime's network poller on the QP's own socket,
// as a goroutine blocked in net.Conn.Read does, and reads without
// blocking into the Core's RxBuf from the RawConn.Read callback. No pin is
// held across the wait: the callback returns false to wait only after
// RxDone. It holds the receive token for the QP's life. What the drives
// decide is done outside the callback: closing the connection inside it
// would wait for the callback's own reference to the descriptor.

// rawIO: the non-blocking system calls through a connection's RawConn
// (rxWaiting, txTry, txRawWait) are available.
const rawIO = true

// rxWaiting is the QP's receive goroutine.
func (q *QP) rxWaiting() {
	fn := q.rxReadable
	for !q.rxStop.Load() {
		q.rxActs = 0
		err := q.rc.Read(fn)
		q.act(q.rxActs)
		if err != nil {
			q.readFailed(err)
			return
		}
	}
}

// readFailed hands the Core the error that ended a wait for the socket
// (the connection closed or failed): nothing if the QP is torn down
// already.
func (q *QP) readFailed(err error) {
	q.mu.Lock()
	q.core.RxEOF(err)
	a := q.afterLocked()
	q.mu.Unlock()
	q.act(a)
}

// rxReadable is the RawConn.Read callback: it reads until the socket is
// empty (false: wait) or the Core wants no more input (true), and returns
// true too when the drives decided something (a transmission, a close),
// which the caller does before it waits again.
func (q *QP) rxReadable(fd uintptr) bool {
	for {
		a, stop, empty := q.readOnce(fd, false)
		q.rxActs |= a
		switch {
		case stop, a != 0:
			return true
		case empty:
			return false // wait for more
		}
	}
}

// readOnce makes one non-blocking read of the socket into the Core's
// receive buffers (RxBufs, read or readv, RxDone) for the holder of the
// receive token, and handles what it brought. It returns what the drives
// decided, whether input is over (the Core wants no more, or the stream
// ended: rxStop is set), and whether the socket was empty. Only EAGAIN
// says it is: a short read may have taken the peer's FIN (or come before
// an error) with the last octets, which the runtime's edge-triggered
// poller does not announce again; the next read says. byWaiter counts the
// FPDUs it completes in FPDUsByWaiters (the reading waiter).
func (q *QP) readOnce(fd uintptr, byWaiter bool) (a acts, stop, empty bool) {
	q.mu.Lock()
	iov := q.core.RxBufs(q.rxIOV[:0])
	if len(iov) == 0 {
		q.rxStop.Store(true)
		a = q.afterLocked()
		q.mu.Unlock()
		return a, true, false
	}
	q.rxIOV = iov
	q.rxOut = true
	q.mu.Unlock()
	var n int
	var errno syscall.Errno
	if len(iov) == 1 {
		n, errno = rawRead(fd, iov[0])
	} else {
		n, errno, q.rxVec = rawReadv(fd, iov, q.rxVec)
	}
	q.mu.Lock()
	q.rxOut = false
	st := q.core.Stats()
	before := st.FPDUsReceived
	q.core.RxDone(n)
	if byWaiter {
		st.FPDUsByWaiters += st.FPDUsReceived - before
	}
	clear(q.rxIOV)
	if n > 0 {
		q.hold = false
	}
	switch {
	case errno == syscall.EAGAIN:
		empty = true
	case errno != 0:
		q.core.RxEOF(os.NewSyscallError("read", errno))
		stop = true
	case n == 0:
		q.core.RxEOF(nil)
		stop = true
	}
	if stop {
		q.rxStop.Store(true)
	}
	a = q.afterLocked()
	q.mu.Unlock()
	return a, stop, empty
}

// iovScratch is the iovec array rawReadv fills.
type iovScratch = []syscall.Iovec
