//go:build !linux

package perftest

import "net"

// unackedBytes is not known on this platform.
func unackedBytes(*net.TCPConn) (int, bool) { return 0, false }
