package perftest

import (
	"net"
	"syscall"
	"unsafe"
)

// siocOUTQ is Linux's SIOCOUTQ (TIOCOUTQ): for TCP, the bytes sent but
// not yet acknowledged plus those not yet sent.
const siocOUTQ = 0x5411

// unackedBytes returns what c's peer has not acknowledged yet.
func unackedBytes(c *net.TCPConn) (int, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int32
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, siocOUTQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil || errno != 0 {
		return 0, false
	}
	return int(n), true
}
