//go:build linux && !race && !iwarp_portable

package fpdu

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawReader reads with readv(2) through the connection's syscall.RawConn,
// so that a large payload and the octets after it (the trailer and the
// next header) arrive in one system call; the staging buffer's bulk reads
// go the same way. Under the race detector the portable path
// (readv_portable.go) is used instead, because the detector cannot see
// writes made by the kernel.
//
// The socket is non-blocking (the runtime's poller waits for it), so the
// call is made with syscall.RawSyscall: without the scheduler's
// entersyscall/exitsyscall, which, when every P had been idle, also wake
// the runtime's sysmon thread — one more thread to wake per message in a
// ping-pong (docs/performance.md, "Latency").
type rawReader struct {
	ok    bool
	rc    syscall.RawConn
	iov   [2]syscall.Iovec
	cnt   uintptr // iovecs in use
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

func (x *rawReader) init(c net.Conn) {
	rc, ok := rawConn(c)
	if !ok {
		return
	}
	x.rc = rc
	x.fn = x.do
	x.ok = true
}

// readv reads into a, then b. It returns how many octets landed in a and
// in b.
func (x *rawReader) readv(a, b []byte) (na, nb int, err error) {
	x.iov[0].Base = &a[0]
	x.iov[0].SetLen(len(a))
	x.iov[1].Base = &b[0]
	x.iov[1].SetLen(len(b))
	n, err := x.call(2)
	if n > len(a) {
		return len(a), n - len(a), err
	}
	return n, 0, err
}

// read reads into p (not empty), as net.Conn.Read would.
func (x *rawReader) read(p []byte) (int, error) {
	x.iov[0].Base = &p[0]
	x.iov[0].SetLen(len(p))
	return x.call(1)
}

// call reads into the first cnt iovecs, waiting for readability if the
// socket has nothing, and returns the octets read.
func (x *rawReader) call(cnt uintptr) (int, error) {
	x.cnt, x.n, x.errno = cnt, 0, 0
	err := x.rc.Read(x.fn)
	x.iov[0].Base, x.iov[1].Base = nil, nil
	if err == nil && x.errno != 0 {
		err = x.errno
	}
	if err == nil && x.n == 0 {
		err = io.EOF
	}
	return x.n, err
}

// do is the RawConn.Read callback: false asks to wait for readability.
func (x *rawReader) do(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READV, fd, uintptr(unsafe.Pointer(&x.iov[0])), x.cnt)
		switch e {
		case 0:
			x.n = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		x.errno = e
		return true
	}
}
