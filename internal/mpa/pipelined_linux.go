//go:build linux && !iwarp_portable

package mpa

import (
	"net"
	"syscall"
)

// pipelined reports whether bytes are waiting on nc, without consuming or
// waiting for any. It is called right after a Request or Reply was read, at
// a point where the peer may not yet legally send anything more (RFC 5044
// §7.1.2: the Initiator waits for the Reply, the Responder for the
// Initiator's first FPDU), so any byte found is pipelined behind the frame.
// Bytes that arrive later cannot be told from a legal first FPDU and are
// left to full operation. Connections that are not sockets report false.
func pipelined(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait: EAGAIN just means nothing is there
	})
	return err == nil && n > 0
}

// canPeek says whether pipelined bytes are detected at startup.
const canPeek = true
