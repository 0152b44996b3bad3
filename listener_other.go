//go:build !linux

package iwarp

import (
	"net"
	"time"
)

// deferAccept does nothing: TCP_DEFER_ACCEPT is Linux's (see
// listener_linux.go). Connections that send nothing reach the Listener
// at once, where they take part in the shedding of ListenConfig.MaxPending.
func deferAccept(net.Listener, time.Duration) {}
