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
// next header) arrive in one system call. Under the race detector the
// portable path (readv_portable.go) is used instead, because the detector
// cannot see writes made by the kernel.
type rawReader struct {
	ok    bool
	rc    syscall.RawConn
	iov   [2]syscall.Iovec
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
	x.n, x.errno = 0, 0
	err = x.rc.Read(x.fn)
	x.iov[0].Base, x.iov[1].Base = nil, nil
	if err == nil && x.errno != 0 {
		err = x.errno
	}
	n := x.n
	if err == nil && n == 0 {
		err = io.EOF
	}
	if n > len(a) {
		return len(a), n - len(a), err
	}
	return n, 0, err
}

// do is the RawConn.Read callback: false asks to wait for readability.
func (x *rawReader) do(fd uintptr) bool {
	for {
		n, _, e := syscall.Syscall(syscall.SYS_READV, fd, uintptr(unsafe.Pointer(&x.iov[0])), 2)
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
