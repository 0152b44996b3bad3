//go:build !linux || iwarp_portable

package mpa

import "net"

// pipelined reports false: peeking at a socket without consuming is
// implemented for Linux only (see peek_linux.go). Pipelined bytes then
// surface in full operation as a framing error.
func pipelined(net.Conn) bool { return false }

// CanPeek says whether sockets are peeked at: pipelined bytes are detected
// at startup, and BytesWaiting sees bytes that arrived.
const CanPeek = false

// BytesWaiting reports false: peeking is implemented for Linux only.
func BytesWaiting(net.Conn) bool { return false }

// waitReadable returns at once: waiting for readability without a read is
// implemented for Linux only, so the wait happens in the read itself,
// with its buffer held.
func waitReadable(net.Conn) error { return nil }
