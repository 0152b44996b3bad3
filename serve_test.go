package iwarp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/leakcheck"
)

// serveBound is how long a step that must end promptly may take before
// the test declares it hung.
const serveBound = 10 * time.Second

// serveRun is a Listener running Serve in a goroutine of its own.
type serveRun struct {
	ln   *iwarp.Listener
	stop context.CancelFunc
	done chan error // Serve's result

	returned bool  // wait received it:
	err      error // this
}

// startServe starts ln.Serve(cfg) on a new loopback Listener; the test's
// cleanup stops it and closes the Listener.
func startServe(t *testing.T, cfg *iwarp.ServeConfig) *serveRun {
	t.Helper()
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &serveRun{ln: ln, stop: stop, done: make(chan error, 1)}
	go func() { s.done <- ln.Serve(ctx, cfg) }()
	t.Cleanup(func() {
		stop()
		s.wait(t)
		ln.Close()
	})
	return s
}

// addr returns the Listener's address.
func (s *serveRun) addr() string { return s.ln.Addr().String() }

// wait returns Serve's result, failing the test if Serve does not return
// within serveBound.
func (s *serveRun) wait(t *testing.T) error {
	t.Helper()
	if s.returned {
		return s.err
	}
	select {
	case s.err = <-s.done:
		s.returned = true
		return s.err
	case <-time.After(serveBound):
		t.Fatal("Serve did not return")
		return nil
	}
}

// closedWithin fails the test unless ch is closed within serveBound.
func closedWithin(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(serveBound):
		t.Fatalf("%s: not within %v", what, serveBound)
	}
}

// TestServeReturnsOnCancel: Serve returns ctx's error once ctx ends, while
// Handles are running and peers never disconnect: it cancels the Handles'
// ctx, closes the QPs (a Handle that waits on its QP only returns then),
// waits for the Handles and leaves no goroutine and no connection behind.
func TestServeReturnsOnCancel(t *testing.T) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	const clients = 4
	started := make(chan *iwarp.QP, clients)
	var mu sync.Mutex
	var ended []error // per Handle: its ctx's error when it returned
	var count atomic.Int32
	handle := func(ctx context.Context, qp *iwarp.QP) {
		started <- qp
		if qp.State() != iwarp.StateRTS {
			t.Errorf("Handle got a QP in state %v", qp.State())
		}
		if count.Add(1)%2 == 0 {
			<-ctx.Done() // a Handle that watches its ctx
		} else {
			<-qp.Done() // one that only watches its QP
		}
		mu.Lock()
		ended = append(ended, ctx.Err())
		mu.Unlock()
	}
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ln.Serve(ctx, &iwarp.ServeConfig{PD: pd, Handle: handle}) }()

	var qps []*iwarp.QP
	for i := 0; i < clients; i++ {
		qp, err := iwarp.Dial(context.Background(), ln.Addr().String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer qp.Close() // the peers never disconnect on their own
		qps = append(qps, qp)
	}
	for i := 0; i < clients; i++ {
		select {
		case <-started:
		case <-time.After(serveBound):
			t.Fatal("Handle not started")
		}
	}
	if open, _ := iwarp.ListenerCounts(ln); open != clients {
		t.Fatalf("listener counts %d connections, want %d", open, clients)
	}

	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Serve returned %v, want context.Canceled", err)
		}
	case <-time.After(serveBound):
		t.Fatal("Serve did not return after its ctx was cancelled")
	}
	mu.Lock()
	if len(ended) != clients {
		t.Errorf("%d Handles returned before Serve did, want %d", len(ended), clients)
	}
	for _, err := range ended {
		if err == nil {
			t.Error("a Handle returned with its ctx not cancelled")
		}
	}
	mu.Unlock()
	if open, startups := iwarp.ListenerCounts(ln); open != 0 || startups != 0 {
		t.Errorf("after Serve: listener counts %d connections, %d in startup; want none", open, startups)
	}
	// Serve's QPs were closed: the clients see their peer gone.
	for _, qp := range qps {
		closedWithin(t, qp.Done(), "client QP torn down after Serve closed its peer")
	}
	if bad := leakcheck.Leaked(time.Second, "iwarp.(*server)", "iwarp.(*Listener).Serve"); len(bad) > 0 {
		t.Fatalf("Serve left goroutines:\n%v", bad)
	}
}

// TestServeListenerClosed: Serve returns ErrClosed once its Listener is
// closed.
func TestServeListenerClosed(t *testing.T) {
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ln.Serve(context.Background(), nil) }() // a Device of Serve's own
	qp, err := iwarp.Dial(context.Background(), ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	ln.Close()
	select {
	case err := <-done:
		if !errors.Is(err, iwarp.ErrClosed) {
			t.Fatalf("Serve returned %v, want ErrClosed", err)
		}
	case <-time.After(serveBound):
		t.Fatal("Serve did not return after its Listener was closed")
	}
	closedWithin(t, qp.Done(), "client QP torn down once Serve closed its peer")
}

// TestServeWithoutHandle: without Handle, a QP stays up until the peer
// disconnects, and is then closed (taken out of the Listener's count).
func TestServeWithoutHandle(t *testing.T) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mr, _, err := pd.RegisterWords(1, iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, &iwarp.ServeConfig{Memory: []*iwarp.MR{mr}})
	qp, err := iwarp.Dial(context.Background(), s.addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := qp.PeerMemory()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qp.FetchAdd(context.Background(), peer[0], 1); err != nil {
		t.Fatal(err)
	}
	if open, _ := iwarp.ListenerCounts(s.ln); open != 1 {
		t.Fatalf("listener counts %d connections, want 1", open)
	}
	if err := qp.Disconnect(context.Background()); err != nil {
		t.Fatal(err)
	}
	qp.Close()
	// The server's QP is torn down by the peer's disconnect.
	deadline := time.After(serveBound)
	for {
		select {
		case ev := <-dev.Events():
			if ev.Type == iwarp.EventPeerDisconnected {
				if open, _ := iwarp.ListenerCounts(s.ln); open != 0 {
					t.Fatalf("listener counts %d connections after the peer left, want 0", open)
				}
				return
			}
		case <-deadline:
			t.Fatal("no EventPeerDisconnected for the server's QP")
		}
	}
}

// TestServeHandleReturns: when Handle returns, Serve disconnects the QP;
// the client's QP is torn down by its peer, and closing it then is fine.
func TestServeHandleReturns(t *testing.T) {
	s := startServe(t, &iwarp.ServeConfig{Handle: func(context.Context, *iwarp.QP) {}})
	qp, err := iwarp.Dial(context.Background(), s.addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	closedWithin(t, qp.Done(), "client QP torn down after the Handle returned")
	if !errors.Is(qp.Err(), iwarp.ErrPeerDisconnected) {
		t.Errorf("client QP: %v, want ErrPeerDisconnected", qp.Err())
	}
	if err := qp.Close(); err != nil {
		t.Errorf("Close after the peer's disconnect: %v", err)
	}
	if _, err := qp.PD().Device().AllocPD(); !errors.Is(err, iwarp.ErrClosed) {
		t.Errorf("Device of a dialled QP: AllocPD %v, want ErrClosed", err)
	}
}

// closeAfterRequest is a client connection that closes itself right after
// its first write (the MPA Request): the server's Accept then fails.
type closeAfterRequest struct{ net.Conn }

func (c closeAfterRequest) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.Conn.Close()
	return n, err
}

// TestServeSurvivesFailedAccept: a peer that goes away during the
// connection setup does not stop Serve; the failure is logged.
func TestServeSurvivesFailedAccept(t *testing.T) {
	var mu sync.Mutex
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(serveLogWriter(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), nil))
	s := startServe(t, &iwarp.ServeConfig{Logger: logger})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		_, err := iwarp.Dial(ctx, s.addr(), &iwarp.DialConfig{Conn: iwarp.ConnOptions{
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return closeAfterRequest{nc}, nil
			},
		}})
		if err == nil {
			t.Fatal("Dial over a connection closed after the Request succeeded")
		}
	}
	qp, err := iwarp.Dial(ctx, s.addr(), nil)
	if err != nil {
		t.Fatalf("Dial after failed setups: %v", err)
	}
	qp.Close()
	select {
	case err := <-s.done:
		t.Fatalf("Serve returned %v", err)
	default:
	}
	s.stop()
	if err := s.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v, want context.Canceled", err)
	}
	mu.Lock()
	t.Logf("log:\n%s", logged.String())
	mu.Unlock()
}

type serveLogWriter func([]byte) (int, error)

func (f serveLogWriter) Write(p []byte) (int, error) { return f(p) }

// TestServeConfigErrors: an advertisement that cannot be made, or memory
// of another PD, fails Serve at once.
func TestServeConfigErrors(t *testing.T) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd1, _ := dev.AllocPD()
	pd2, _ := dev.AllocPD()
	mr, _, err := pd1.RegisterWords(1, iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	many := make([]*iwarp.MR, iwarp.MaxAdvertisedBuffers+1)
	for i := range many {
		many[i] = mr
	}
	for name, cfg := range map[string]*iwarp.ServeConfig{
		"memory of another PD":    {PD: pd2, Memory: []*iwarp.MR{mr}},
		"memory and private data": {Memory: []*iwarp.MR{mr}, Conn: iwarp.ConnOptions{PrivateData: []byte("x")}},
		"too many buffers":        {Memory: many},
		"nil memory":              {Memory: []*iwarp.MR{nil}},
	} {
		if err := ln.Serve(context.Background(), cfg); !errors.Is(err, iwarp.ErrInvalidConfig) {
			t.Errorf("%s: Serve returned %v, want ErrInvalidConfig", name, err)
		}
	}
}

// ExampleListener_Serve runs a Handle per connection: the client
// advertises a buffer when it dials, and the server's Handle writes into
// it. When the Handle returns, Serve disconnects the QP in order, so the
// client's QP is done only once the Write was placed.
func ExampleListener_Serve() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		served <- ln.Serve(ctx, &iwarp.ServeConfig{
			Handle: func(ctx context.Context, qp *iwarp.QP) {
				peer, err := qp.PeerMemory()
				if err != nil {
					log.Print(err)
					return
				}
				msg, err := qp.PD().RegisterMemory([]byte("hello, client"), 0)
				if err != nil {
					log.Print(err)
					return
				}
				if err := qp.Write(ctx, peer[0], msg.SGE(0, msg.Len())); err != nil {
					log.Print(err)
				}
			},
		})
	}()

	// The client's buffer lives in the PD of the dialled QP.
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, _ := dev.AllocPD()
	inbox, err := pd.RegisterMemory(make([]byte, 13), iwarp.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	qp, err := iwarp.Dial(ctx, ln.Addr().String(), &iwarp.DialConfig{Memory: []*iwarp.MR{inbox}})
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()
	<-qp.Done() // the server disconnected after its Write
	fmt.Println(string(inbox.Bytes()))
	fmt.Println("peer disconnected:", errors.Is(qp.Err(), iwarp.ErrPeerDisconnected))
	stop()
	<-served
	// Output:
	// hello, client
	// peer disconnected: true
}
