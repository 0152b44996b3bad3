//go:build !linux || iwarp_portable

package mpa

import "net"

// pipelined reports false: peeking at a socket without consuming is
// implemented for Linux only (see pipelined_linux.go). Pipelined bytes then
// surface in full operation as a framing error.
func pipelined(net.Conn) bool { return false }

// canPeek says whether pipelined bytes are detected at startup.
const canPeek = false
