//go:build linux && !iwarp_portable && !race

package poll

import (
	"syscall"
	"unsafe"
)

// do is the RawConn callback: one read, readv, write or writev, retried
// only when a signal interrupted it. The socket is non-blocking, so the
// call is a RawSyscall, without the scheduler's entersyscall/exitsyscall
// (which, when every P was idle, also wake the runtime's sysmon thread: a
// thread more to wake per message in a ping-pong). It returns true: the
// caller never waits for the socket.
func (x *rawIO) do(fd uintptr) bool {
	trap, ptr, cnt := uintptr(syscall.SYS_READ), uintptr(0), uintptr(0)
	if x.buf != nil {
		ptr, cnt = uintptr(unsafe.Pointer(&x.buf[0])), uintptr(len(x.buf))
		if x.write {
			trap = syscall.SYS_WRITE
		}
	} else {
		ptr, cnt = uintptr(unsafe.Pointer(&x.iov[0])), uintptr(len(x.iov))
		trap = syscall.SYS_READV
		if x.write {
			trap = syscall.SYS_WRITEV
		}
	}
	for {
		n, _, e := syscall.RawSyscall(trap, fd, ptr, cnt)
		if e == syscall.EINTR {
			continue
		}
		x.n, x.errno = int(n), e
		return true
	}
}
