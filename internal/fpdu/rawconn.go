//go:build linux && !iwarp_portable

package fpdu

import (
	"net"
	"syscall"
)

// rawConn returns c's syscall.RawConn, if it has one (TCP and Unix
// connections do; TLS and in-memory ones do not).
func rawConn(c net.Conn) (syscall.RawConn, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}
