//go:build linux && !iwarp_portable

package poll

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// batch is how many ready sockets one epoll_wait returns at most.
const batch = 128

// Poller is one epoll set and the goroutine that calls the Handlers of its
// ready sockets. One serves every connection of a Device.
type Poller struct {
	file   *os.File        // the epoll descriptor, polled by the runtime
	rc     syscall.RawConn // file's: the goroutine waits through it
	epfd   int
	waitFn func(uintptr) bool
	events []syscall.EpollEvent
	done   chan struct{} // closed when the goroutine has finished

	// ctl keeps the epoll descriptor open during epoll_ctl calls: each
	// holds it for reading; Close sets ctlClosed holding it for writing,
	// before the goroutine closes the descriptor.
	ctl       sync.RWMutex
	ctlClosed bool

	mu      sync.Mutex
	idle    sync.Cond // broadcast when running changes while a Close waits
	handles []*Handle // by slot: what an event's slot and generation name
	free    []uint32  // unused slots
	gen     uint32    // the last generation handed out
	running *Handle   // the Handle whose Ready is being called
	waiting int       // Handle.Close calls waiting for running to change
	closed  bool
	failed  error  // why the goroutine stopped by itself (never expected)
	goid    uint64 // the goroutine's id, for Close's "inside Ready?" test

	// closeWaits, if set (tests), is called when a Handle.Close starts to
	// wait for a running Ready (under mu), and when Poller.Close starts to
	// wait for the goroutine.
	closeWaits func()
}

// New creates a Poller and starts its goroutine. It returns ErrUnsupported
// if the epoll descriptor cannot be waited on through the runtime's
// network poller.
func New() (*Poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(epfd), "epoll")
	// A descriptor the runtime could not add to its poller has no
	// deadlines: waiting on it would block a thread, not park.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, ErrUnsupported
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, ErrUnsupported
	}
	p := &Poller{
		file:   f,
		rc:     rc,
		epfd:   epfd,
		events: make([]syscall.EpollEvent, batch),
		done:   make(chan struct{}),
	}
	p.idle.L = &p.mu
	p.waitFn = p.wait
	go p.run()
	return p, nil
}

// Close stops the Poller: no Ready is called after it returns, none is
// running (unless Close was called from inside one: it then does not wait
// for itself, and the goroutine ends when that Ready returns), and the
// goroutine has finished. Every Handle's Arm and Disarm then return
// ErrClosed; their Read and Write still work. Close is bounded by the
// Ready running when it is called, which must be short; it never waits
// for a peer. Closing twice is harmless.
func (p *Poller) Close() error {
	p.mu.Lock()
	p.closed = true
	inside := p.running != nil && goroutineID() == p.goid
	hook := p.closeWaits
	p.mu.Unlock()
	p.ctl.Lock()
	p.ctlClosed = true
	p.ctl.Unlock()
	// A deadline in the past wakes the goroutine's wait and makes every
	// later wait return at once; the goroutine closes the descriptor as it
	// leaves, after its last use of it. Closing the file here instead
	// would wait for the goroutine's wait to end, from inside Ready that
	// would never happen.
	_ = p.file.SetReadDeadline(time.Unix(1, 0))
	if !inside {
		if hook != nil {
			hook()
		}
		<-p.done
	}
	return nil
}

// run is the Poller's goroutine.
func (p *Poller) run() {
	defer close(p.done)
	p.mu.Lock()
	p.goid = goroutineID()
	p.mu.Unlock()
	// The wait returns only when Close ended it (with its deadline, or
	// from inside Ready), or when epoll_wait failed, which cannot happen
	// on a valid epoll set.
	err := p.rc.Read(p.waitFn)
	p.mu.Lock()
	if !p.closed {
		if p.failed == nil { // the wait's own error, not epoll_wait's
			p.failed = err
		}
		p.failed = fmt.Errorf("connection poller stopped: %w", p.failed)
		p.closed = true
	}
	p.mu.Unlock()
	p.ctl.Lock()
	p.ctlClosed = true
	p.ctl.Unlock()
	p.file.Close()
}

// wait is the goroutine's RawConn.Read callback: it takes the ready
// events without waiting and dispatches them. It returns false to park
// the goroutine in the runtime's poller until the epoll set is readable,
// true to leave (closed, or epoll_wait failed). Staying inside one
// RawConn.Read means the runtime's readiness notice is reset only once:
// an event that comes while Ready runs is never lost; at worst it costs
// one epoll_wait that finds nothing.
func (p *Poller) wait(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, fd,
			uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)), 0, 0, 0)
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		default:
			p.mu.Lock()
			p.failed = os.NewSyscallError("epoll_pwait", e)
			p.mu.Unlock()
			return true
		}
		if n == 0 {
			return false
		}
		if !p.dispatch(p.events[:n]) {
			return true
		}
		if int(n) < len(p.events) {
			return false
		}
	}
}

// dispatch calls Ready for each event whose registration is still the one
// that armed it. It reports false once the Poller is closed.
func (p *Poller) dispatch(events []syscall.EpollEvent) bool {
	p.mu.Lock()
	for i := range events {
		if p.closed {
			break
		}
		h := p.lookup(uint32(events[i].Fd), uint32(events[i].Pad))
		if h == nil {
			continue // closed since: a stale event
		}
		p.running = h
		r := h.handler
		p.mu.Unlock()
		// The Arm that caused this event held h.mu: taking it makes what
		// the arming goroutine did before Arm happen before Ready, in
		// the terms of Go's memory model (and of the race detector,
		// which does not see the kernel's part). A Close that began
		// meanwhile waits for this call, which then does nothing.
		h.mu.Lock()
		closing := h.closed
		h.mu.Unlock()
		if !closing {
			r.Ready()
		}
		p.mu.Lock()
		p.running = nil
		if p.waiting > 0 {
			p.idle.Broadcast()
		}
	}
	open := !p.closed
	p.mu.Unlock()
	return open
}

// lookup returns the Handle in slot if it has generation gen (mu held).
func (p *Poller) lookup(slot, gen uint32) *Handle {
	if int(slot) >= len(p.handles) {
		return nil
	}
	if h := p.handles[slot]; h != nil && h.gen == gen {
		return h
	}
	return nil
}

// add gives h a slot and a generation (mu held).
func (p *Poller) add(h *Handle) {
	p.gen++
	h.gen = p.gen
	if n := len(p.free); n > 0 {
		h.slot = p.free[n-1]
		p.free = p.free[:n-1]
		p.handles[h.slot] = h
		return
	}
	h.slot = uint32(len(p.handles))
	p.handles = append(p.handles, h)
}

// remove frees h's slot, if h still holds it (mu held).
func (p *Poller) remove(h *Handle) {
	if p.lookup(h.slot, h.gen) == h {
		p.handles[h.slot] = nil
		p.free = append(p.free, h.slot)
	}
}

// closedErr is what Arm and Register return once the Poller is closed.
func (p *Poller) closedErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed != nil {
		return fmt.Errorf("%w: %w", ErrClosed, p.failed)
	}
	return ErrClosed
}
