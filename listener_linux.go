package iwarp

import (
	"net"
	"syscall"
	"time"
)

// deferAccept asks the kernel (TCP_DEFER_ACCEPT) to hand ln's connections
// to accept(2) only once their first bytes arrived, for up to d: an
// Initiator sends its MPA Request at once, so a connection that sends
// nothing stays a half-open request in the kernel (no socket, no file
// descriptor, nothing in this process) until then, and only then reaches
// the Listener, which sheds it or closes it at its StartupTimeout. A
// listener that is not a *net.TCPListener is left as it is.
func deferAccept(ln net.Listener, d time.Duration) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return
	}
	secs := int((d + time.Second - 1) / time.Second)
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_DEFER_ACCEPT, secs)
	})
}
