package iwarp_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// A fault-injecting TCP proxy for the fault matrix (fault_test.go). It sits
// between a Connect side (the client leg) and a Listener (the server leg),
// forwards bytes in both directions, and on command, or when a trigger
// fires, applies one fault to the connection: to both legs at once, so
// that each endpoint sees its peer die, reset, half-close or stall.

// faultKind is what the proxy does to the connection.
type faultKind int

const (
	faultNone      faultKind = iota
	faultDie                 // close both legs: each endpoint reads FIN
	faultReset               // SO_LINGER 0 then close: each endpoint gets RST
	faultHalfClose           // CloseWrite toward each endpoint, keep reading and discarding
	faultStall               // stop forwarding and reading, keep the sockets open
)

var faultNames = [...]string{"none", "die", "reset", "half-close", "stall"}

func (f faultKind) String() string { return faultNames[f] }

// Directions through the proxy.
const (
	c2s = 0 // from the Connect side to the Accept side
	s2c = 1 // from the Accept side to the Connect side
)

// faultTrigger makes one direction hold (stop forwarding and reading) and
// then injects a fault.
type faultTrigger struct {
	// after: forward this many more bytes (counted from arming), then
	// hold when the next byte arrives: it and all after it are withheld.
	// <0: unused.
	after int64
	// atEOF: hold at the end of the stream instead of forwarding the FIN.
	atEOF bool
	// onOther: hold as soon as the other direction first forwards bytes
	// (e.g. withhold what answers the first reply).
	onOther bool
	// fault is injected once held (faultNone: only hold).
	fault faultKind
}

// faultProxy forwards one connection and injects a fault into it.
type faultProxy struct {
	ln       net.Listener
	upstream string
	closed   chan struct{}
	closeMu  sync.Once
	wg       sync.WaitGroup

	mu        sync.Mutex
	legs      [2]*net.TCPConn // the leg each direction reads from: [c2s] client, [s2c] server
	forwarded [2]int64
	limit     [2]int64 // hold the direction once forwarded reaches it (<0: none)
	trig      [2]faultTrigger
	armed     [2]bool
	heldCh    [2]chan struct{} // closed when the direction holds
	fault     faultKind
	faultedCh chan struct{} // closed when the fault is injected
	faultedAt time.Time
}

// newFaultProxy listens on loopback and forwards the first connection it
// accepts to upstream. It is closed when the test ends.
func newFaultProxy(t testing.TB, upstream string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{
		ln: ln, upstream: upstream, closed: make(chan struct{}),
		limit:     [2]int64{-1, -1},
		heldCh:    [2]chan struct{}{make(chan struct{}), make(chan struct{})},
		faultedCh: make(chan struct{}),
	}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the address the Connect side dials.
func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

// Arm sets a trigger on direction dir. Bytes already forwarded do not count
// towards tr.after.
func (p *faultProxy) Arm(dir int, tr faultTrigger) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trig[dir], p.armed[dir] = tr, true
	if tr.after >= 0 && !tr.atEOF && !tr.onOther {
		p.limit[dir] = p.forwarded[dir] + tr.after
	}
}

// Hold makes direction dir stop forwarding now: bytes read from then on
// are withheld.
func (p *faultProxy) Hold(dir int) { p.Arm(dir, faultTrigger{after: 0}) }

// Held is closed once direction dir holds.
func (p *faultProxy) Held(dir int) <-chan struct{} { return p.heldCh[dir] }

// Faulted is closed once the fault was injected.
func (p *faultProxy) Faulted() <-chan struct{} { return p.faultedCh }

// FaultedAt returns when the fault was injected (zero if not yet).
func (p *faultProxy) FaultedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faultedAt
}

// Inject applies fault f to both legs, once (later calls do nothing).
func (p *faultProxy) Inject(f faultKind) {
	p.mu.Lock()
	if p.fault != faultNone || f == faultNone {
		p.mu.Unlock()
		return
	}
	p.fault, p.faultedAt = f, time.Now()
	legs := p.legs
	p.mu.Unlock()
	for _, c := range legs {
		if c == nil {
			continue
		}
		switch f {
		case faultDie:
			_ = c.Close()
		case faultReset:
			_ = c.SetLinger(0)
			_ = c.Close()
		case faultHalfClose:
			_ = c.CloseWrite()
		}
	}
	close(p.faultedCh)
}

// Close closes both legs and the listener and waits for the proxy's
// goroutines.
func (p *faultProxy) Close() {
	p.closeMu.Do(func() {
		close(p.closed)
		_ = p.ln.Close()
		p.mu.Lock()
		legs := p.legs
		p.mu.Unlock()
		for _, c := range legs {
			if c != nil {
				_ = c.Close()
			}
		}
	})
	p.wg.Wait()
}

// accept takes the first connection, dials upstream and starts forwarding.
func (p *faultProxy) accept() {
	defer p.wg.Done()
	c, err := p.ln.Accept()
	_ = p.ln.Close() // one connection per proxy
	if err != nil {
		return
	}
	s, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	select {
	case <-p.closed:
		p.mu.Unlock()
		_ = c.Close()
		_ = s.Close()
		return
	default:
	}
	p.legs = [2]*net.TCPConn{c.(*net.TCPConn), s.(*net.TCPConn)}
	p.mu.Unlock()
	p.wg.Add(2)
	go p.forward(c2s)
	go p.forward(s2c)
}

// forward copies direction dir until the stream ends, holding and injecting
// as its trigger says, and discarding after a half-close. A direction holds
// when it has read bytes it must withhold (so the fault strikes only once
// the endpoint sent them), and reads nothing more after that.
func (p *faultProxy) forward(dir int) {
	defer p.wg.Done()
	src, dst := p.legs[dir], p.legs[1-dir]
	buf := make([]byte, 128<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			allow, discard, stop := p.admit(dir, n)
			if stop {
				p.waitClosed()
				return
			}
			if !discard && allow > 0 {
				if _, werr := dst.Write(buf[:allow]); werr != nil && !p.discarding() {
					return
				}
			}
			if !discard && allow < n && !p.hold(dir) {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				p.endOfStream(dir, dst)
			}
			return
		}
	}
}

// admit decides what happens to n bytes just read in direction dir: how
// many to forward, whether to discard them all (half-close), or whether to
// stop (stall, or the legs are gone).
func (p *faultProxy) admit(dir, n int) (allow int, discard, stop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.fault {
	case faultHalfClose:
		return 0, true, false
	case faultNone:
	default:
		return 0, false, true
	}
	if o := 1 - dir; p.armed[o] && p.trig[o].onOther && p.limit[o] < 0 {
		p.limit[o] = p.forwarded[o] // this direction speaks: the other holds from now
	}
	allow = n
	if l := p.limit[dir]; l >= 0 && p.forwarded[dir]+int64(n) > l {
		allow = int(l - p.forwarded[dir])
	}
	p.forwarded[dir] += int64(allow)
	return allow, false, false
}

// hold stops direction dir: it signals Held, injects the trigger's fault,
// and waits for one. It reports whether the direction keeps reading (to
// discard, after a half-close).
func (p *faultProxy) hold(dir int) bool {
	p.mu.Lock()
	ch, f := p.heldCh[dir], p.trig[dir].fault
	p.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
	p.Inject(f)
	select {
	case <-p.faultedCh:
	case <-p.closed:
		return false
	}
	if p.discarding() {
		return true
	}
	p.waitClosed()
	return false
}

// endOfStream handles EOF in direction dir: the FIN is forwarded, unless
// the trigger holds at EOF (then the fault is injected there).
func (p *faultProxy) endOfStream(dir int, dst *net.TCPConn) {
	p.mu.Lock()
	atEOF := p.armed[dir] && p.trig[dir].atEOF && p.fault == faultNone
	p.mu.Unlock()
	switch {
	case atEOF:
		p.hold(dir)
	case !p.discarding():
		_ = dst.CloseWrite()
	}
}

func (p *faultProxy) discarding() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fault == faultHalfClose
}

func (p *faultProxy) waitClosed() { <-p.closed }
