//go:build !linux || iwarp_portable

package poll

import (
	"errors"
	"net"
	"testing"
)

// Without epoll, New refuses with an error that says so and matches
// errors.ErrUnsupported, and the stubs refuse too.
func TestUnsupportedWithoutEpoll(t *testing.T) {
	p, err := New()
	if p != nil || !errors.Is(err, ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("New() = %v, %v; want nil, ErrUnsupported", p, err)
	}
	var none *Poller
	if _, err := none.Register(&net.TCPConn{}, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Register: %v, want ErrUnsupported", err)
	}
	var h *Handle
	if err := h.Arm(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Arm: %v, want ErrUnsupported", err)
	}
	if _, err := h.Read(make([]byte, 1)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Read: %v, want ErrUnsupported", err)
	}
}
