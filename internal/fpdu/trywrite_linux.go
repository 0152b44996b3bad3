//go:build linux && !iwarp_portable

package fpdu

import (
	"errors"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawWriter makes one non-blocking writev(2) through the connection's
// syscall.RawConn, for TryFlush. Go sockets are non-blocking underneath, so
// the call takes what the socket buffer has room for and never waits.
type rawWriter struct {
	ok    bool
	rc    syscall.RawConn
	iov   []syscall.Iovec
	cnt   int
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// maxIOV is Linux's IOV_MAX: the most iovecs one writev takes.
const maxIOV = 1024

func (x *rawWriter) init(c net.Conn) {
	rc, ok := rawConn(c)
	if !ok {
		return
	}
	x.rc = rc
	x.fn = x.do
	x.ok = true
}

// do is the RawConn.Write callback. The socket is non-blocking, so the
// call is a syscall.RawSyscall, as in rawReader.do.
func (x *rawWriter) do(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&x.iov[0])), uintptr(x.cnt))
		if e == syscall.EINTR {
			continue
		}
		x.n, x.errno = int(n), e
		return true // never wait for the socket: that is Flush's job
	}
}

// writev writes the slices of bufs (up to IOV_MAX of them) once, without
// blocking, and returns how many octets the socket took (0 when it had no
// room). A write deadline that has passed (one a blocking Flush set, long
// ago) does not apply to a write that never waits: RawConn.Write refuses
// to start after it, and that is reported as no room, so that the bytes
// go to the caller's blocking Flush, which sets a deadline of its own.
func (x *rawWriter) writev(bufs net.Buffers) (int, error) {
	if !x.ok {
		return 0, nil
	}
	x.iov = x.iov[:0]
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if len(x.iov) == maxIOV {
			break
		}
		v := syscall.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		x.iov = append(x.iov, v)
	}
	if len(x.iov) == 0 {
		return 0, nil
	}
	x.cnt, x.n, x.errno = len(x.iov), 0, 0
	err := x.rc.Write(x.fn)
	clear(x.iov) // drop the references to the payloads
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, nil // nothing was written: the callback never ran
	}
	if err != nil {
		return 0, err
	}
	switch x.errno {
	case 0:
		return x.n, nil
	case syscall.EAGAIN, syscall.EINTR:
		return 0, nil
	}
	return 0, x.errno
}
