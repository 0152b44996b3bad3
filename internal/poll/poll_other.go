//go:build !linux || iwarp_portable

package poll

import "syscall"

// Poller would watch sockets for a Device; this system has no epoll, so
// New always fails with ErrUnsupported.
type Poller struct{}

// New returns ErrUnsupported: the caller reads each connection with a
// goroutine of its own.
func New() (*Poller, error) { return nil, ErrUnsupported }

// Close does nothing.
func (p *Poller) Close() error { return nil }

// Register returns ErrUnsupported.
func (p *Poller) Register(c syscall.Conn, r Handler) (*Handle, error) {
	return nil, ErrUnsupported
}

// Handle is a registered socket; none exist on this system.
type Handle struct{}

// Arm returns ErrUnsupported.
func (h *Handle) Arm() error { return ErrUnsupported }

// Disarm returns ErrUnsupported.
func (h *Handle) Disarm() error { return ErrUnsupported }

// Close does nothing.
func (h *Handle) Close() error { return nil }

// Read returns ErrUnsupported.
func (h *Handle) Read(p []byte) (int, error) { return 0, ErrUnsupported }

// Readv returns ErrUnsupported.
func (h *Handle) Readv(bufs [][]byte) (int, error) { return 0, ErrUnsupported }

// Write returns ErrUnsupported.
func (h *Handle) Write(p []byte) (int, error) { return 0, ErrUnsupported }

// Writev returns ErrUnsupported.
func (h *Handle) Writev(bufs [][]byte) (int, error) { return 0, ErrUnsupported }
