//go:build linux && !iwarp_portable

package fpdu

import (
	"net"
	"syscall"
)

// EMSS returns the effective MSS of c (the TCP_MAXSEG socket option), the
// input of MULPDU (RFC 5044 §4.1). For a connection that is not a TCP
// socket, or if the option cannot be read, it returns DefaultEMSS.
func EMSS(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return DefaultEMSS
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return DefaultEMSS
	}
	mss, serr := 0, error(nil)
	err = rc.Control(func(fd uintptr) {
		mss, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG)
	})
	if err != nil || serr != nil || mss <= 0 {
		return DefaultEMSS
	}
	return mss
}
