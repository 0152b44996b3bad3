//go:build linux && !iwarp_portable

package poll

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// Ready is called once per Arm: after it fired, more bytes call nothing
// until the next Arm, which calls it at once for the bytes already there.
func TestReadyOncePerArm(t *testing.T) {
	f := newFixture(t)
	f.present(t, "1")
	f.expectCalls(t, 0, "before Arm")

	arm(t, f.h)
	f.s.wait(t, "first Arm")
	f.present(t, "2") // not read: the socket stays readable, disarmed
	f.expectCalls(t, 1, "for one Arm")

	arm(t, f.h) // the bytes are there already: no more writes
	f.s.wait(t, "second Arm, no new bytes")
	f.expectCalls(t, 2, "for two Arms")
	if got, err := drain(f.h); got != "12" || err != nil {
		t.Fatalf("read %q, %v; want \"12\"", got, err)
	}
}

// Arming an armed Handle changes nothing: ten Arms while the Poller's
// goroutine is busy (parked in another Handle's Ready, so that it takes no
// event in between) make one call of Ready.
func TestArmIdempotent(t *testing.T) {
	f := newFixture(t)
	f.present(t, "x")
	busy := parkReady(t, f.p)
	for range 10 {
		arm(t, f.h)
	}
	busy.release <- struct{}{}
	f.s.wait(t, "ten Arms")
	f.expectCalls(t, 1, "for ten Arms in a row")
}

// Disarm withdraws an Arm: bytes then call nothing until the next Arm.
func TestDisarm(t *testing.T) {
	f := newFixture(t)
	arm(t, f.h)
	if err := f.h.Disarm(); err != nil {
		t.Fatal(err)
	}
	f.present(t, "x")
	f.expectCalls(t, 0, "while disarmed")
	arm(t, f.h)
	f.s.wait(t, "Arm after Disarm")
}

// Bytes that arrive while the Handle is disarmed (the receive token's
// holder is releasing it) make the next Arm call Ready without waiting for
// anything: the median from Arm to Ready is far below any timer's period.
// (A 10 ms backstop, what the engine has today, gives about 5 ms.)
func TestArmAfterDataFiresAtOnce(t *testing.T) {
	p := newPoller(t)
	local, peer := tcpPair(t)
	got := make(chan string, 1)
	var h *Handle
	h = register(t, p, local, readyFunc(func() {
		s, err := drain(h)
		if err != nil {
			s = "error: " + err.Error()
		}
		got <- s // no Arm: the test arms
	}))
	const rounds = 21
	var lat []time.Duration
	for i := range rounds {
		want := string(rune('a' + i))
		write(t, peer, want)
		waitReadable(t, local) // in the socket, disarmed
		start := time.Now()
		arm(t, h)
		select {
		case s := <-got:
			lat = append(lat, time.Since(start))
			if s != want {
				t.Fatalf("round %d: Ready read %q, want %q", i, s, want)
			}
		case <-time.After(bound):
			t.Fatalf("round %d: Arm did not call Ready for the bytes in the socket", i)
		}
	}
	slices.Sort(lat)
	t.Logf("Arm to Ready: median %v, max %v", lat[rounds/2], lat[rounds-1])
	if med := lat[rounds/2]; med > 3*time.Millisecond {
		t.Errorf("median from Arm to Ready %v, want well under a millisecond (a timer?)", med)
	}
}

// Arm from inside Ready and from another goroutine at the same time (with
// Disarm in between) loses no bytes, and calls of Ready never overlap.
func TestRearmConcurrently(t *testing.T) {
	p := newPoller(t)
	local, peer := tcpPair(t)
	const total = 4 << 20
	var (
		h                       *Handle
		inReady, overlaps, read int
		done                    = make(chan struct{})
		failed                  = make(chan error, 1)
	)
	buf := make([]byte, 64<<10)
	h = register(t, p, local, readyFunc(func() {
		inReady++ // only the Poller's goroutine writes it: -race checks
		if inReady != 1 {
			overlaps++
		}
		defer func() { inReady-- }()
		for range 8 { // a budget, as the shell's
			n, err := h.Read(buf)
			read += n
			if errors.Is(err, ErrWouldBlock) || n < len(buf) {
				break
			}
			if err != nil {
				failed <- err
				return
			}
		}
		if read == total {
			close(done)
			return
		}
		if err := h.Arm(); err != nil {
			failed <- err
		}
	}))
	arm(t, h)
	stop := make(chan struct{})
	armed := make(chan error, 1)
	go func() { // the other goroutine: a waiter taking and releasing
		for i := 0; ; i++ {
			select {
			case <-stop:
				armed <- nil
				return
			default:
			}
			err := h.Disarm()
			if err == nil {
				err = h.Arm()
			}
			if err != nil {
				armed <- err
				return
			}
		}
	}()
	go func() {
		chunk := make([]byte, 32<<10)
		for sent := 0; sent < total; sent += len(chunk) {
			if _, err := peer.Write(chunk); err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case err := <-failed:
		t.Fatal(err)
	case <-time.After(bound):
		t.Fatalf("read %d of %d octets within %v", read, total, bound)
	}
	close(stop)
	if err := <-armed; err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if overlaps != 0 {
		t.Fatalf("%d calls of Ready overlapped another", overlaps)
	}
}

// A hang-up calls Ready (epoll reports it whether asked or not, and
// EPOLLRDHUP is asked), and Read then says io.EOF; a reset says
// ECONNRESET.
func TestHangupFiresReady(t *testing.T) {
	p := newPoller(t)
	for _, reset := range []bool{false, true} {
		local, peer := tcpPair(t)
		s := newSignal()
		h := register(t, p, local, s)
		arm(t, h)
		if reset {
			peer.SetLinger(0) // close with RST
		}
		peer.Close()
		s.wait(t, "hang-up")
		_, err := h.Read(make([]byte, 8))
		want := io.EOF
		if reset {
			want = syscall.ECONNRESET
		}
		if !errors.Is(err, want) {
			t.Errorf("Read after the hang-up (reset %v): %v, want %v", reset, err, want)
		}
		h.Close()
	}
}

// Read, Readv, Write and Writev never wait: they report ErrWouldBlock, and
// what they move arrives in order.
func TestNonBlockingIO(t *testing.T) {
	p := newPoller(t)
	local, peer := tcpPair(t)
	h := register(t, p, local, newSignal())
	defer h.Close()

	if n, err := h.Read(make([]byte, 8)); n != 0 || !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("Read of an empty socket: %d, %v; want ErrWouldBlock", n, err)
	}
	if n, err := h.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read of nothing: %d, %v", n, err)
	}
	if n, err := h.Readv([][]byte{nil, {}}); n != 0 || err != nil {
		t.Fatalf("Readv of nothing: %d, %v", n, err)
	}
	if n, err := h.Writev([][]byte{[]byte("ab"), nil, []byte("cde")}); n != 5 || err != nil {
		t.Fatalf("Writev: %d, %v", n, err)
	}
	if n, err := h.Write([]byte("f")); n != 1 || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	got := make([]byte, 6)
	if _, err := io.ReadFull(peer, got); err != nil || string(got) != "abcdef" {
		t.Fatalf("the peer read %q, %v", got, err)
	}

	write(t, peer, "0123456789")
	waitReadable(t, local)
	a, b := make([]byte, 3), make([]byte, 4)
	if n, err := h.Readv([][]byte{a, nil, b}); n != 7 || err != nil || string(a)+string(b) != "0123456" {
		t.Fatalf("Readv: %d, %v, %q %q", n, err, a, b)
	}
	if got, err := drain(h); got != "789" || err != nil {
		t.Fatalf("Read: %q, %v", got, err)
	}

	// The peer does not read: writes fill the socket and then would block.
	chunk := make([]byte, 64<<10)
	sent := 0
	for i := 0; ; i++ {
		n, err := h.Write(chunk)
		sent += n
		if errors.Is(err, ErrWouldBlock) {
			break
		}
		if err != nil || i > 10000 {
			t.Fatalf("Write into a full socket: %v after %d octets", err, sent)
		}
	}
	if n, err := h.Writev([][]byte{chunk}); n != 0 || !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("Writev into a full socket: %d, %v", n, err)
	}
	if _, err := io.CopyN(io.Discard, peer, int64(sent)); err != nil {
		t.Fatal(err)
	}

	peer.Close()
	waitReadable(t, local)
	if n, err := h.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("Read at the end: %d, %v; want io.EOF", n, err)
	}
	if n, err := h.Readv([][]byte{make([]byte, 8)}); n != 0 || err != io.EOF {
		t.Fatalf("Readv at the end: %d, %v; want io.EOF", n, err)
	}
}

// What cannot be polled is refused with ErrUnsupported (a regular file),
// and nothing is registered after Close.
func TestRegisterRefuses(t *testing.T) {
	p := newPoller(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "regular"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := p.Register(f, newSignal()); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Register of a regular file: %v, want ErrUnsupported", err)
	}
	local, _ := tcpPair(t)
	p.Close()
	if _, err := p.Register(local, newSignal()); !errors.Is(err, ErrClosed) {
		t.Errorf("Register after Close: %v, want ErrClosed", err)
	}
}

// A socket registered again after its Handle was closed gets a new
// generation: the old Handle's Arm is refused, and events go to the new
// Handler only.
func TestReregisterSameSocket(t *testing.T) {
	p := newPoller(t)
	local, peer := tcpPair(t)
	old := newSignal()
	h1 := register(t, p, local, old)
	arm(t, h1)
	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}
	fresh := newSignal()
	h2 := register(t, p, local, fresh)
	if h2.slot != h1.slot || h2.gen == h1.gen {
		t.Fatalf("slot %d gen %d after slot %d gen %d: want the slot reused with a new generation", h2.slot, h2.gen, h1.slot, h1.gen)
	}
	if err := h1.Arm(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Arm of the closed Handle: %v, want ErrClosed", err)
	}
	arm(t, h2)
	write(t, peer, "x")
	fresh.wait(t, "the new registration")
	if n := old.calls.Load(); n != 0 {
		t.Fatalf("the closed Handle's Ready was called %d times", n)
	}
	h2.Close()
}

// Arm, Disarm and the non-blocking calls allocate nothing: the shell makes
// them per message.
func TestNoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	f := newFixture(t)
	buf, bufs := make([]byte, 16), [][]byte{make([]byte, 8), make([]byte, 8)}
	one, ones := []byte("x"), [][]byte{[]byte("y"), []byte("z")}
	allocs := testing.AllocsPerRun(200, func() {
		if f.h.Arm() != nil || f.h.Disarm() != nil {
			t.Fatal("Arm or Disarm failed")
		}
		if _, err := f.h.Read(buf); err != ErrWouldBlock {
			t.Fatal(err)
		}
		if _, err := f.h.Readv(bufs); err != ErrWouldBlock {
			t.Fatal(err)
		}
		if n, err := f.h.Write(one); n != 1 {
			t.Fatal(err)
		}
		if n, err := f.h.Writev(ones); n != 2 {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per Arm, Disarm, Read, Readv, Write and Writev", allocs)
	}
}
