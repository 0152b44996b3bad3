package iwarp

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goiwarp/iwarp/internal/mpa"
)

// ListenConfig configures a Listener. The zero value gives the defaults.
//
// A connection's startup runs from the moment the Listener accepts its TCP
// connection until its QP is in StateRTS or the startup fails: the MPA
// Request is read, the request waits for Accept, and ConnRequest.Accept
// sends the Reply and waits for the RTR. After it the connection is
// established until its QP is torn down. docs/security.md ("Connection
// setup under attack") gives what each limit bounds and what a
// connection costs.
type ListenConfig struct {
	// StartupTimeout bounds each connection's whole startup, counted from
	// the TCP accept: the MPA Request, the wait for Accept or Reject, and
	// the Reply and the RTR inside ConnRequest.Accept (which also ends at
	// its context's deadline or ConnOptions.Timeout, if earlier). A
	// connection still in startup then is closed. Default 5 s.
	StartupTimeout time.Duration
	// MaxPrivateData bounds the Request's private data (default 512).
	MaxPrivateData int
	// MaxPending bounds the connections in startup (default 64). The
	// Listener never stops accepting: a new TCP connection that finds
	// MaxPending in startup sheds one of them, the one that has gone
	// longest without progress (it reached its stage — accepted, Request
	// read, handed out by Accept, Reply sent — earliest), passing over
	// those whose next bytes have already arrived (Linux). Its Accept or
	// Reject then fails with ErrShed. Silent or slow peers thus push out
	// each other, not the peers that keep the protocol's pace.
	MaxPending int
	// MaxConnections bounds the connections of this Listener, counted from
	// the TCP accept until their startup fails or their QP is torn down
	// (default DefaultMaxConnections; negative: no bound). At the bound a
	// new TCP connection sheds one in startup as MaxPending does, or, when
	// every one is established, is closed at once, before any MPA byte.
	MaxConnections int
}

// DefaultMaxConnections is ListenConfig.MaxConnections' default.
const DefaultMaxConnections = 4096

// Listener defaults.
const (
	defaultStartupTimeout = mpa.DefaultResponderTimeout
	defaultMaxPending     = 64
)

// Listener accepts iWARP connections: it reads each new connection's MPA
// Request in the background and hands complete requests to Accept.
type Listener struct {
	ln  net.Listener
	cfg ListenConfig
	// open counts the connections against MaxConnections: in startup, or
	// established with a QP not torn down yet (the QP's teardown takes it
	// out, qp.releaseListener). It is increased only under mu.
	open atomic.Int64

	mu       sync.Mutex
	closed   bool
	startups list.List     // of *pendingConn, least recent progress first
	queue    list.List     // of *pendingConn whose Request waits for Accept, oldest first
	ready    chan struct{} // a Request was queued (capacity 1)

	// acceptErr is the error that ended the accept loop: the net.Listener
	// was closed under the Listener (net.ErrClosed). Written once, under
	// mu, before stopped is closed.
	acceptErr error
	stopped   chan struct{}

	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup
}

// Listen listens on addr for iWARP connections.
func Listen(network, addr string, cfg *ListenConfig) (*Listener, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	return NewListener(ln, cfg), nil
}

// NewListener accepts iWARP connections from a net.Listener the caller
// made (TLS, a network namespace...). The Listener owns ln. On Linux, if
// ln is a *net.TCPListener, it sets TCP_DEFER_ACCEPT on it (as Listen
// does): a connection reaches the Listener only once its first bytes
// arrived, or after about the StartupTimeout, so that peers that send
// nothing cost the process nothing.
func NewListener(ln net.Listener, cfg *ListenConfig) *Listener {
	l := &Listener{ln: ln, done: make(chan struct{}), stopped: make(chan struct{}), ready: make(chan struct{}, 1)}
	if cfg != nil {
		l.cfg = *cfg
	}
	if l.cfg.StartupTimeout <= 0 {
		l.cfg.StartupTimeout = defaultStartupTimeout
	}
	if l.cfg.MaxPending <= 0 {
		l.cfg.MaxPending = defaultMaxPending
	}
	if l.cfg.MaxConnections == 0 {
		l.cfg.MaxConnections = DefaultMaxConnections
	}
	deferAccept(ln, l.cfg.StartupTimeout)
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// Addr returns the listening address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// acceptLoop takes every connection the kernel queued as soon as it can:
// it never waits for a startup to end (admit sheds one instead).
func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				// Closed under the Listener: nothing more will come.
				// Accept reports it once the queued requests are taken.
				l.mu.Lock()
				l.acceptErr = err
				l.mu.Unlock()
				close(l.stopped)
				return
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors: startups may hold them all (silent
				// peers); the stalest gives its own back, and the
				// newcomer is taken at once.
				if shed := l.shedOne(); shed != nil {
					shed.Close()
					continue
				}
			}
			// Nothing to give back, or another error (a caller's
			// listener past its deadline, say): back off, 5 ms doubling
			// to 1 s, as net/http's Serve does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-l.done:
				return
			}
			continue
		}
		backoff = 0
		p, shed := l.admit(nc, time.Now())
		if shed != nil {
			shed.Close()
		}
		if p == nil {
			nc.Close() // over MaxConnections, or closing: refused before any MPA byte
			continue
		}
		go l.startup(p)
	}
}

// startup reads the connection's Request and queues it for Accept.
func (l *Listener) startup(p *pendingConn) {
	defer l.wg.Done()
	tuneConn(p.nc)
	req, err := mpa.ReadRequest(context.Background(), p.nc, &mpa.Limits{MaxPrivateData: l.cfg.MaxPrivateData, Deadline: p.deadline})
	if err != nil { // a garbage, stalled or shed startup: mpa.md says close (done)
		l.failed(p)
		return
	}
	if !l.enqueue(p, &ConnRequest{nc: p.nc, req: req, l: l, p: p}) {
		p.nc.Close() // shed or closed while its Request was read
	}
}

// Accept waits for the next connection request.
func (l *Listener) Accept(ctx context.Context) (*ConnRequest, error) {
	stopped := l.stopped
	for {
		if r, err := l.dequeue(); r != nil || err != nil {
			return r, err
		}
		if err := l.stoppedErr(); err != nil {
			return nil, err
		}
		select {
		case <-l.ready:
		case <-stopped:
			stopped = nil // from now on a startup's end signals ready
		case <-l.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// stoppedErr returns Accept's error once the accept loop stopped and no
// startup is still reading a Request (one that is may yet queue it), and
// wakes the next waiting Accept so that it returns the same.
func (l *Listener) stoppedErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.acceptErr == nil {
		return nil
	}
	for e := l.startups.Front(); e != nil; e = e.Next() {
		if e.Value.(*pendingConn).stage == stageAccepted {
			return nil
		}
	}
	l.signalReady()
	return fmt.Errorf("%w: %w", ErrListenerFailed, l.acceptErr)
}

// Close stops listening; connections whose request was not yet taken by
// Accept are closed.
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		conns := l.shut()
		close(l.done)
		err = l.ln.Close()
		l.mu.Lock()
		if l.acceptErr != nil && errors.Is(err, net.ErrClosed) {
			err = nil // its maker closed it first, as ErrListenerFailed said
		}
		l.mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
		l.wg.Wait()
	})
	return err
}
