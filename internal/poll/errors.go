package poll

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsupported: this system, or this connection, cannot be polled
	// (no epoll, a connection without a file descriptor, a descriptor in
	// blocking mode). The caller reads with a goroutine of its own
	// instead. It matches errors.ErrUnsupported.
	ErrUnsupported = fmt.Errorf("readiness polling is not available for this connection: %w", errors.ErrUnsupported)
	// ErrWouldBlock: a non-blocking Read found nothing to read, or a
	// non-blocking Write found no room in the socket's buffer.
	ErrWouldBlock = errors.New("the socket is not ready: the operation would block")
	// ErrClosed: the Handle or its Poller is closed.
	ErrClosed = errors.New("the connection poller is closed")
)

// Handler is told that a registered socket needs attention.
type Handler interface {
	// Ready is called on the Poller's goroutine when the socket is
	// readable, has reached the end of its stream or has an error, while
	// its Handle is armed; the call disarms it (one-shot). Calls for one
	// Handle never overlap, and Ready may be called when there turns out
	// to be nothing to read (after a concurrent reader took the bytes,
	// or for a second Arm): it must then simply return.
	//
	// Every registered socket waits while Ready runs, so it must not
	// block for long: take the connection's receive token (by
	// compare-and-swap, never waiting for it), read with Handle.Read or
	// Readv until ErrWouldBlock, a short read or a budget, release the
	// token and Arm again. Ready may call any method of any Handle,
	// including Close of its own, and Close of the Poller.
	Ready()
}
