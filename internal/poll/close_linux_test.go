//go:build linux && !iwarp_portable

package poll

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/leakcheck"
)

// Handle.Close while that Handle's Ready runs waits for it to return; no
// Ready is called afterwards.
func TestCloseWhileReadyRuns(t *testing.T) {
	p := newPoller(t)
	flush := barrier(t, p)
	b := parkReady(t, p)
	b.closeDuring(t, b.h.Close)
	if err := b.h.Arm(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Arm after Close: %v, want ErrClosed", err)
	}
	write(t, b.peer, "y")
	waitReadable(t, b.local)
	flush()
	if n := b.calls.Load(); n != 1 {
		t.Fatalf("Ready called %d times, want 1 (none after Close)", n)
	}
}

// Close of the Poller while a Ready runs waits for it to return.
func TestPollerCloseWaitsForReady(t *testing.T) {
	p := newPoller(t)
	b := parkReady(t, p)
	b.closeDuring(t, p.Close)
}

// parked is a registered socket whose first Ready blocks until released.
type parked struct {
	h               *Handle
	local, peer     *net.TCPConn
	release         chan struct{}
	calls, returned atomic.Int32
}

// parkReady registers a socket, makes it ready and returns once its Ready
// runs, blocked.
func parkReady(t *testing.T, p *Poller) *parked {
	t.Helper()
	b := &parked{release: make(chan struct{})}
	b.local, b.peer = tcpPair(t)
	entered := make(chan struct{})
	b.h = register(t, p, b.local, readyFunc(func() {
		if b.calls.Add(1) == 1 {
			close(entered)
			<-b.release
		}
		b.returned.Add(1)
	}))
	arm(t, b.h)
	write(t, b.peer, "x")
	select {
	case <-entered:
	case <-time.After(bound):
		t.Fatal("Ready was not called")
	}
	return b
}

// closeDuring calls closeFn on another goroutine while the parked Ready
// runs, waits until it waits for Ready, releases Ready, and fails unless
// closeFn returned after Ready did.
func (b *parked) closeDuring(t *testing.T, closeFn func() error) {
	t.Helper()
	waiting := closeWaits(b.h.p)
	closed := make(chan int32)
	go func() {
		closeFn()
		closed <- b.returned.Load()
	}()
	select {
	case <-waiting:
	case <-time.After(bound):
		t.Fatal("Close did not wait for the running Ready")
	}
	b.release <- struct{}{}
	if n := <-closed; n != 1 {
		t.Fatalf("Close returned before Ready did (%d returns)", n)
	}
}

// Close called from inside the Handle's own Ready returns at once (it does
// not wait for itself), and so does Close of the Poller from inside Ready;
// the Poller's goroutine then ends when that Ready returns.
func TestCloseFromInsideReady(t *testing.T) {
	p := newPoller(t)
	local, peer := tcpPair(t)
	s := newSignal()
	var h *Handle
	s.also = func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
		if err := h.Arm(); !errors.Is(err, ErrClosed) {
			t.Errorf("Arm after Close: %v, want ErrClosed", err)
		}
	}
	h = register(t, p, local, s)
	arm(t, h)
	write(t, peer, "x")
	s.wait(t, "closing its own Handle")

	local2, peer2 := tcpPair(t)
	s2 := newSignal()
	s2.also = func() { p.Close() }
	h2 := register(t, p, local2, s2)
	arm(t, h2)
	write(t, peer2, "x")
	s2.wait(t, "closing the Poller")
	select {
	case <-p.done:
	case <-time.After(bound):
		t.Fatal("the Poller's goroutine did not end after Close from inside Ready")
	}
	if err := h2.Arm(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Arm after the Poller closed: %v, want ErrClosed", err)
	}
}

// Close of a Poller with 1,000 registered sockets, some of them armed and
// busy, returns promptly, leaves no goroutine and no descriptor behind, and
// no Ready runs after it.
func TestPollerCloseBounded(t *testing.T) {
	const n, busy = 1000, 10
	d := newDialer(t)
	locals := make([]*net.TCPConn, n)
	peers := make([]*net.TCPConn, n)
	for i := range n {
		locals[i], peers[i] = d.pair()
	}
	goroutines, fds := runtime.NumGoroutine(), countFDs(t)

	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var closed atomic.Bool
	var late, calls atomic.Int64
	running := make(chan struct{})
	handles := make([]*Handle, n)
	for i := range n {
		var h *Handle
		h = register(t, p, locals[i], readyFunc(func() {
			if closed.Load() {
				late.Add(1)
			}
			if calls.Add(1) == busy {
				close(running)
			}
			drain(h)
			h.Arm()
		}))
		handles[i] = h
		arm(t, h)
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // keeps the first sockets busy while Close runs
		defer close(stopped)
		for {
			for _, c := range peers[:busy] {
				select {
				case <-stop:
					return
				default:
				}
				c.Write([]byte("busy"))
			}
		}
	}()
	select { // the Poller is busy calling Readys
	case <-running:
	case <-time.After(bound):
		t.Fatalf("%d calls of Ready within %v", calls.Load(), bound)
	}

	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	closed.Store(true)
	close(stop)
	<-stopped
	t.Logf("Close with %d registered sockets (%d busy) took %v", n, busy, took)
	if took > time.Second {
		t.Errorf("Close took %v", took)
	}
	for _, c := range peers {
		c.Write([]byte("late"))
	}
	for i, h := range handles {
		if err := h.Arm(); !errors.Is(err, ErrClosed) {
			t.Fatalf("handle %d: Arm after the Poller closed: %v, want ErrClosed", i, err)
		}
	}
	if bad := leakcheck.Leaked(bound, "internal/poll.(*Poller)"); len(bad) > 0 {
		t.Fatalf("the Poller's goroutine is still running:\n%s", bad[0])
	}
	if got := runtime.NumGoroutine(); got != goroutines {
		t.Errorf("%d goroutines after Close, %d before New", got, goroutines)
	}
	if got := countFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before New", got, fds)
	}
	if l := late.Load(); l != 0 {
		t.Errorf("Ready called %d times after Close returned", l)
	}
	for _, h := range handles {
		h.Close() // after the Poller's end: nothing to do, no error
	}
}

// countFDs counts the process's open descriptors.
func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// closeWaits returns a channel closed the first time a Close waits for the
// Poller's goroutine.
func closeWaits(p *Poller) <-chan struct{} {
	waiting := make(chan struct{})
	var once sync.Once
	p.mu.Lock()
	p.closeWaits = func() { once.Do(func() { close(waiting) }) }
	p.mu.Unlock()
	return waiting
}
