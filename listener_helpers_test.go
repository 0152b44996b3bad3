package iwarp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/mpa"
)

// pipeListener is a net.Listener of in-memory connections (net.Pipe), for
// Listener tests inside a testing/synctest bubble, where real sockets do
// not work. Its queue stands for the kernel's accept queue.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn, 4096), done: make(chan struct{})}
}

// Accept returns the server end of the next dialled pipe.
func (pl *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-pl.conns:
		return c, nil
	case <-pl.done:
		return nil, net.ErrClosed
	}
}

func (pl *pipeListener) Close() error {
	pl.once.Do(func() { close(pl.done) })
	return nil
}

func (pl *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial queues a new connection and returns its client end.
func (pl *pipeListener) dial() net.Conn {
	c, s := net.Pipe()
	pl.conns <- s
	return c
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// requestBytes is an MPA Request as this stack's Initiator sends it under
// the default configuration (Rev 2, peer-to-peer mode, IRD/ORD 16).
func requestBytes() []byte {
	hdr, blk := mpa.RequestFrame(mpa.DefaultConfig())
	hdr.PrivateData = mpa.AppendIRDORD(nil, &blk)
	return mpa.AppendFrame(nil, &hdr)
}

// sendRequest dials pl and sends an MPA Request; the connection is closed
// when the test ends.
func sendRequest(t testing.TB, pl *pipeListener) net.Conn {
	c := pl.dial()
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(requestBytes()); err != nil {
		t.Fatal(err)
	}
	return c
}

// readReply reads one MPA Reply (header and private data) from c.
func readReply(c net.Conn) error {
	var hdr [mpa.HeaderLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	pd := make([]byte, int(hdr[mpa.HeaderLen-2])<<8|int(hdr[mpa.HeaderLen-1]))
	_, err := io.ReadFull(c, pd)
	return err
}

// heldConn is a client connection that lets its first writes through
// and holds the others until release is closed: from the second write, a
// peer that sends its RTR late; from the first, one whose Request comes
// late. It hides the socket's syscall.Conn, so every write goes through
// Write.
type heldConn struct {
	net.Conn
	release <-chan struct{}
	from    int    // the first write held, counted from 1
	onHold  func() // if set, called when the first write is held
	writes  int
}

func (h *heldConn) Write(b []byte) (int, error) {
	if h.writes++; h.writes >= h.from {
		if h.writes == h.from && h.onHold != nil {
			h.onHold()
		}
		<-h.release
	}
	return h.Conn.Write(b)
}

// connectHeld runs an Initiator's MPA startup over nc until release is
// closed: under Rev 2 (peer-to-peer mode) its RTR is held, under Rev 1
// (no RTR) its Request. It returns the connection (for the test to close)
// or the startup's error.
func connectHeld(ctx context.Context, nc net.Conn, release <-chan struct{}, rev1 bool) (*mpa.Conn, error) {
	return connectHeldNotify(ctx, nc, release, rev1, nil)
}

// connectHeldNotify is connectHeld calling onHold when the write is held.
func connectHeldNotify(ctx context.Context, nc net.Conn, release <-chan struct{}, rev1 bool, onHold func()) (*mpa.Conn, error) {
	cfg := mpa.DefaultConfig()
	from := 2
	if rev1 {
		cfg.Rev, cfg.P2P, from = mpa.Rev1, false, 1
	}
	return mpa.Connect(ctx, &heldConn{Conn: nc, release: release, from: from, onHold: onHold}, cfg)
}

// acceptor answers every request of a Listener with ConnRequest.Accept,
// each in its own goroutine, on a QP of its own (one whose Accept failed
// is used again), and counts: the Accept calls in progress and the QPs in
// StateRTS (live: never torn down here), with the most of each seen.
type acceptor struct {
	t   testing.TB
	dev *iwarp.Device
	pd  *iwarp.PD

	inAccept, maxInAccept atomic.Int64
	live, maxLive         atomic.Int64
	failures              atomic.Int64
	errs                  chan error // every Accept's result, if not nil

	mu      sync.Mutex
	qps     []*iwarp.QP   // all
	idle    []*iwarp.QP   // free for an Accept
	changed chan struct{} // closed (and replaced) when an Accept ends
	wg      sync.WaitGroup
}

func newAcceptor(t testing.TB) *acceptor {
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	return &acceptor{t: t, dev: dev, pd: pd, changed: make(chan struct{})}
}

// ended tells waitFor that an Accept ended.
func (a *acceptor) ended() {
	a.mu.Lock()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// waitFor waits until cond holds, looking again each time an Accept
// ends, and reports false if ctx ends first.
func (a *acceptor) waitFor(ctx context.Context, cond func() bool) bool {
	for {
		a.mu.Lock()
		ch := a.changed
		a.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return cond()
		}
	}
}

// qp returns an idle QP.
func (a *acceptor) qp() (*iwarp.QP, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.idle); n > 0 {
		qp := a.idle[n-1]
		a.idle = a.idle[:n-1]
		return qp, nil
	}
	cq, err := a.dev.NewCQ(8, nil)
	if err != nil {
		return nil, err
	}
	qp, err := a.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 4, RecvQueueDepth: 4})
	if err != nil {
		return nil, err
	}
	a.qps = append(a.qps, qp)
	return qp, nil
}

// serve accepts requests until ln is closed or ctx ends; opts are every
// Accept's options.
func (a *acceptor) serve(ctx context.Context, ln *iwarp.Listener, opts *iwarp.ConnOptions) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			req, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				a.accept(ctx, req, opts)
			}()
		}
	}()
}

func (a *acceptor) accept(ctx context.Context, req *iwarp.ConnRequest, opts *iwarp.ConnOptions) {
	qp, err := a.qp()
	if err != nil {
		a.t.Error(err)
		return
	}
	raise(&a.maxInAccept, a.inAccept.Add(1))
	err = req.Accept(ctx, qp, opts)
	a.inAccept.Add(-1)
	defer a.ended()
	if err != nil {
		a.failures.Add(1)
		if a.errs != nil {
			a.errs <- err
		}
		if qp.State() == iwarp.StateIdle {
			a.mu.Lock()
			a.idle = append(a.idle, qp)
			a.mu.Unlock()
		}
		return
	}
	raise(&a.maxLive, a.live.Add(1))
}

// servePipes starts a Listener of cfg over a pipeListener whose every
// request an acceptor accepts; all is closed when the test ends. ctx ends
// then too.
func servePipes(t testing.TB, cfg *iwarp.ListenConfig) (pl *pipeListener, a *acceptor, ctx context.Context) {
	pl, ln := listenPipes(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	a = newAcceptor(t)
	a.serve(ctx, ln, nil)
	t.Cleanup(func() { ln.Close(); cancel(); a.close() })
	return pl, a, ctx
}

// listenPipes starts a Listener of cfg over a new pipeListener; it is
// closed when the test ends.
func listenPipes(t testing.TB, cfg *iwarp.ListenConfig) (*pipeListener, *iwarp.Listener) {
	pl := newPipeListener()
	ln := iwarp.NewListener(pl, cfg)
	t.Cleanup(func() { ln.Close() })
	return pl, ln
}

// close closes every QP and waits for the goroutines (ln must be closed,
// or ctx ended, first).
func (a *acceptor) close() {
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, qp := range a.qps {
		qp.Close()
		<-qp.Done()
	}
}

// raise makes max at least v.
func raise(max *atomic.Int64, v int64) {
	for {
		m := max.Load()
		if v <= m || max.CompareAndSwap(m, v) {
			return
		}
	}
}

// closedByServer reports whether the server closed c: a read returns EOF
// (or a reset) rather than the read deadline, which must be set.
func closedByServer(c net.Conn) bool {
	var b [1]byte
	_, err := c.Read(b[:])
	return err != nil && !errors.Is(err, net.ErrClosed) && !isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
