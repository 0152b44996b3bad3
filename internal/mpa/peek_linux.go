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
func pipelined(nc net.Conn) bool { return BytesWaiting(nc) }

// CanPeek says whether sockets are peeked at: pipelined bytes are detected
// at startup, and BytesWaiting sees bytes that arrived.
const CanPeek = true

// rawConn returns nc's syscall.RawConn, if it is a socket.
func rawConn(nc net.Conn) (syscall.RawConn, bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}

// peekFlags look at the next byte without consuming it or waiting.
const peekFlags = syscall.MSG_PEEK | syscall.MSG_DONTWAIT

// BytesWaiting reports whether bytes are waiting to be read on nc, without
// consuming them or waiting for any; it may be called while another
// goroutine is blocked reading nc. Connections that are not sockets (and
// every connection where peeking is not implemented: not Linux, or the
// iwarp_portable build) report false.
func BytesWaiting(nc net.Conn) bool {
	rc, ok := rawConn(nc)
	if !ok {
		return false
	}
	var n int
	var b [1]byte
	err := rc.Control(func(fd uintptr) {
		n, _, _ = syscall.Recvfrom(int(fd), b[:], peekFlags)
	})
	return err == nil && n > 0
}

// waitReadable waits until nc has bytes to read or has ended, without
// holding a buffer meanwhile (the runtime's poller waits for the socket),
// and returns the read deadline's expiry or the connection's closing as
// an error. It consumes nothing. Connections that are not sockets return
// at once.
func waitReadable(nc net.Conn) error {
	rc, ok := rawConn(nc)
	if !ok {
		return nil
	}
	var b [1]byte
	return rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], peekFlags)
		return err != syscall.EAGAIN // false: wait for readability
	})
}
