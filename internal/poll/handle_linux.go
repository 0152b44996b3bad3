//go:build linux && !iwarp_portable

package poll

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// Events of an armed registration; epoll adds EPOLLERR and EPOLLHUP to
// every registration whatever is asked.
const (
	armed    = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT
	disarmed = syscall.EPOLLONESHOT
)

// Handle is one socket registered with a Poller.
type Handle struct {
	p       *Poller
	rc      syscall.RawConn
	handler Handler // read by the Poller's goroutine under p.mu
	slot    uint32  // where p.handles holds it; with gen, the event's data
	gen     uint32

	// mu orders Arm and Disarm against Close, so that no epoll_ctl of a
	// closed Handle can reach a later registration of the same socket,
	// and Arm before the Ready it causes (dispatch takes it).
	mu     sync.Mutex
	closed bool
	op     int // the epoll_ctl of ctlFn, its event and its result (mu held)
	ev     syscall.EpollEvent
	ctlErr error
	ctlFn  func(fd uintptr)

	rx rawIO // Read and Readv
	tx rawIO // Write and Writev

	ctls atomic.Uint64 // epoll_ctl calls made, for Ctls
}

// Ctls reports how many epoll_ctl calls h has made (Register, Arm, Disarm
// and Close each make one): the tests of the callers that avoid them read
// it.
func (h *Handle) Ctls() uint64 { return h.ctls.Load() }

// Register adds the socket of c to the Poller, disarmed: Ready is called
// for bytes only after Arm (for an error or a hang-up it may be called
// before, as epoll always reports those). It returns ErrUnsupported if c
// has no descriptor epoll can watch or its descriptor is in blocking mode
// (Go's network connections never are), and ErrClosed after Close.
//
// Close the Handle when the connection is done with, before or after
// closing the connection (closing the connection ends the registration in
// the kernel, and Arm then fails, but the Handle keeps its slot until
// Close).
func (p *Poller) Register(c syscall.Conn, r Handler) (*Handle, error) {
	if r == nil {
		return nil, errors.New("a connection registered for polling needs a Handler")
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, ErrUnsupported
	}
	nonBlocking := false
	if err := rc.Control(func(fd uintptr) {
		fl, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonBlocking = e == 0 && fl&syscall.O_NONBLOCK != 0
	}); err != nil {
		return nil, err
	}
	if !nonBlocking {
		return nil, ErrUnsupported
	}
	h := &Handle{p: p, rc: rc, handler: r}
	h.ctlFn = h.doCtl
	h.rx.fn = h.rx.do
	h.tx.fn = h.tx.do
	h.tx.write = true
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, p.closedErr()
	}
	p.add(h) // before the socket is in the set: its first event finds it
	p.mu.Unlock()
	h.mu.Lock()
	err = h.ctlLocked(syscall.EPOLL_CTL_ADD, disarmed)
	h.mu.Unlock()
	if err != nil {
		p.mu.Lock()
		p.remove(h)
		p.mu.Unlock()
		if errors.Is(err, syscall.EPERM) { // a regular file, a directory
			return nil, ErrUnsupported
		}
		return nil, err
	}
	return h, nil
}

// Arm asks for one call of Ready when the socket is readable (or at its
// end, or in error), and at once if it already is: bytes that arrived while
// the socket was disarmed are reported without waiting for more. It may be
// called from any goroutine, from inside Ready too, and concurrently with
// Ready; arming an armed Handle changes nothing (if the event was already
// taken, Ready may run once more). What the caller did before Arm happens
// before the Ready it causes (in the sense of Go's memory model). It
// returns ErrClosed once the Handle or the Poller is closed, and the
// connection's error once the connection is closed: the caller must then
// read by other means, or stop.
func (h *Handle) Arm() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ctlLocked(syscall.EPOLL_CTL_MOD, armed)
}

// Disarm withdraws an Arm: a goroutine that is going to read the socket
// itself calls it so that the Poller's goroutine is not woken for bytes it
// will not read. It is advice, not exclusion: a Ready already on its way
// still comes, and an error or hang-up may still call Ready once. It
// returns ErrClosed once the Handle or the Poller is closed.
func (h *Handle) Disarm() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ctlLocked(syscall.EPOLL_CTL_MOD, disarmed)
}

// Close removes the socket from the Poller. After it returns, Ready is
// never called again for h, and is not running, with one exception: called
// from inside h's own Ready, Close does not wait for itself, and that
// Ready ends when its caller returns. Close does not close the connection.
// Closing twice is harmless.
//
// How: the Handle leaves the Poller's table under the Poller's mutex,
// which the goroutine holds whenever it picks the Handle to call, so no
// call can start afterwards; if the call of Ready running at that moment
// is h's, Close waits for it to return, unless that call is the caller
// itself (Close compares goroutine ids). The wait therefore depends only
// on Ready being short, as Handler requires, and never on the caller
// doing anything. It must not be called holding a lock Ready takes.
func (h *Handle) Close() error {
	h.mu.Lock()
	if !h.closed {
		// A connection closed first took the registration with it (an
		// error here), and the Poller's end takes them all; either way
		// the table below is what decides whether Ready is called.
		_ = h.ctlLocked(syscall.EPOLL_CTL_DEL, 0)
		h.closed = true
	}
	h.mu.Unlock()
	p := h.p
	p.mu.Lock()
	p.remove(h)
	if p.running == h && goroutineID() != p.goid {
		p.waiting++
		if p.closeWaits != nil {
			p.closeWaits()
		}
		for p.running == h {
			p.idle.Wait()
		}
		p.waiting--
	}
	h.handler = nil
	p.mu.Unlock()
	return nil
}

// ctlLocked makes one epoll_ctl for h (h.mu held).
func (h *Handle) ctlLocked(op int, events uint32) error {
	if h.closed {
		return ErrClosed
	}
	p := h.p
	p.ctl.RLock()
	defer p.ctl.RUnlock()
	if p.ctlClosed {
		return p.closedErr()
	}
	h.op = op
	h.ev = syscall.EpollEvent{Events: events, Fd: int32(h.slot), Pad: int32(h.gen)}
	h.ctlErr = nil
	h.ctls.Add(1)
	// Control keeps the descriptor open meanwhile: its number cannot
	// name another file during the call.
	if err := h.rc.Control(h.ctlFn); err != nil {
		return err
	}
	return h.ctlErr
}

// doCtl is the RawConn.Control callback of ctlLocked.
func (h *Handle) doCtl(fd uintptr) {
	if err := syscall.EpollCtl(h.p.epfd, h.op, int(fd), &h.ev); err != nil {
		h.ctlErr = os.NewSyscallError("epoll_ctl", err)
	}
}
