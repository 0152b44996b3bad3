//go:build linux && !iwarp_portable

package poll

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// bound is how long a test waits for something that should happen at once
// before it fails (never how it synchronises).
const bound = 10 * time.Second

// readyFunc is a Handler made of a function.
type readyFunc func()

func (f readyFunc) Ready() { f() }

// newPoller returns a Poller closed at the end of the test.
func newPoller(t testing.TB) *Poller {
	t.Helper()
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dialer makes loopback TCP connections from one listener.
type dialer struct {
	t  testing.TB
	ln *net.TCPListener
}

func newDialer(t testing.TB) *dialer {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &dialer{t: t, ln: ln}
}

// pair returns the two ends of a new connection, closed at the end of the
// test: local is the end a test registers, peer the other.
func (d *dialer) pair() (local, peer *net.TCPConn) {
	d.t.Helper()
	peer, err := net.DialTCP("tcp", nil, d.ln.Addr().(*net.TCPAddr))
	if err != nil {
		d.t.Fatal(err)
	}
	local, err = d.ln.AcceptTCP()
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() {
		// Reset, not closed in order: thousands of connections would
		// otherwise sit in TIME_WAIT holding ports after the test.
		local.SetLinger(0)
		local.Close()
		peer.Close()
	})
	return local, peer
}

// tcpPair is one connection from a dialer of its own.
func tcpPair(t testing.TB) (local, peer *net.TCPConn) {
	t.Helper()
	return newDialer(t).pair()
}

// signal is a Handler that counts its calls and reports each on a channel.
type signal struct {
	calls atomic.Int64
	ch    chan struct{}
	also  func() // run inside Ready, if set
}

func newSignal() *signal { return &signal{ch: make(chan struct{}, 1024)} }

func (s *signal) Ready() {
	if s.also != nil {
		s.also()
	}
	s.calls.Add(1)
	s.ch <- struct{}{}
}

// wait fails the test unless Ready is called within the bound.
func (s *signal) wait(t testing.TB, what string) {
	t.Helper()
	select {
	case <-s.ch:
	case <-time.After(bound):
		t.Fatalf("%s: Ready was not called within %v", what, bound)
	}
}

// register registers c with r and fails the test on error.
func register(t testing.TB, p *Poller, c syscall.Conn, r Handler) *Handle {
	t.Helper()
	h, err := p.Register(c, r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func arm(t testing.TB, h *Handle) {
	t.Helper()
	if err := h.Arm(); err != nil {
		t.Fatal(err)
	}
}

func write(t testing.TB, c net.Conn, s string) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// drain reads h until it would block and returns what it read.
func drain(h *Handle) (string, error) {
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := h.Read(buf)
		got = append(got, buf[:n]...)
		if errors.Is(err, ErrWouldBlock) {
			return string(got), nil
		}
		if err != nil {
			return string(got), err
		}
	}
}

// waitReadable blocks until c's socket has something to read, watched by
// an epoll set of the test's own (level-triggered, with a timeout as the
// bound): afterwards the octets are in the socket, not on their way.
func waitReadable(t testing.TB, c syscall.Conn) {
	t.Helper()
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(epfd)
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ctlErr error
	if err := rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP}
		ctlErr = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	}); err != nil || ctlErr != nil {
		t.Fatal(err, ctlErr)
	}
	evs := make([]syscall.EpollEvent, 1)
	for {
		n, err := syscall.EpollWait(epfd, evs, int(bound/time.Millisecond))
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			t.Fatalf("the socket did not become readable within %v: %v", bound, err)
		}
		return
	}
}

// barrier returns a function that waits until the Poller has dispatched
// every event queued before it was called: it arms a Handle of its own,
// makes it ready and waits for its Ready. Epoll keeps ready registrations
// in the order they became ready and the Poller calls them in that order,
// so a Ready owed to any socket that was ready before comes first.
func barrier(t testing.TB, p *Poller) func() {
	t.Helper()
	local, peer := tcpPair(t)
	s := newSignal()
	h := register(t, p, local, s)
	buf := make([]byte, 1)
	return func() {
		t.Helper()
		write(t, peer, "b")
		waitReadable(t, local)
		arm(t, h)
		s.wait(t, "barrier")
		if _, err := io.ReadFull(local, buf); err != nil {
			t.Fatal(err)
		}
	}
}

// fixture is a Poller with a barrier, and one registered socket whose
// Ready calls a signal.
type fixture struct {
	p           *Poller
	flush       func()
	local, peer *net.TCPConn
	s           *signal
	h           *Handle
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{p: newPoller(t), s: newSignal()}
	f.flush = barrier(t, f.p)
	f.local, f.peer = tcpPair(t)
	f.h = register(t, f.p, f.local, f.s)
	return f
}

// present writes s from the peer and returns once it is in the socket.
func (f *fixture) present(t *testing.T, s string) {
	t.Helper()
	write(t, f.peer, s)
	waitReadable(t, f.local)
}

// expectCalls fails unless Ready was called n times in all, once the
// Poller has dispatched every event owed so far.
func (f *fixture) expectCalls(t *testing.T, n int64, what string) {
	t.Helper()
	f.flush()
	if got := f.s.calls.Load(); got != n {
		t.Fatalf("Ready called %d times %s, want %d", got, what, n)
	}
}
