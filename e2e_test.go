package iwarp_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// endpoint is one side of a test connection through the public API.
type endpoint struct {
	dev *iwarp.Device
	pd  *iwarp.PD
	cq  *iwarp.CQ
	qp  *iwarp.QP
}

func newEndpoint(t testing.TB) *endpoint {
	t.Helper()
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.NewCQ(256, nil)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 64, RecvQueueDepth: 64})
	if err != nil {
		t.Fatal(err)
	}
	return &endpoint{dev: dev, pd: pd, cq: cq, qp: qp}
}

// connectPair connects two new endpoints over loopback through
// Listen/Connect.
func connectPair(t testing.TB, client, server *iwarp.ConnOptions) (*endpoint, *endpoint) {
	t.Helper()
	return connect(t, newEndpoint(t), newEndpoint(t), client, server)
}

// connect connects a (Initiator) to b (Responder) over loopback.
func connect(t testing.TB, a, b *endpoint, client, server *iwarp.ConnOptions) (*endpoint, *endpoint) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cerr, aerr := dialAccept(ctx, ln, "tcp", ln.Addr().String(), a.qp, b.qp, client, server)
	if cerr != nil || aerr != nil {
		t.Fatalf("connect: %v, accept: %v", cerr, aerr)
	}
	t.Cleanup(func() {
		a.qp.Close()
		b.qp.Close()
	})
	return a, b
}

// dialAccept connects a (Initiator) to b (Responder): a dials addr over
// network while b accepts the first connection request of ln. It returns
// both sides' errors.
func dialAccept(ctx context.Context, ln *iwarp.Listener, network, addr string, a, b *iwarp.QP, client, server *iwarp.ConnOptions) (connectErr, acceptErr error) {
	errc := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			err = req.Accept(ctx, b, server)
		}
		errc <- err
	}()
	connectErr = a.Connect(ctx, network, addr, client)
	return connectErr, <-errc
}

func TestPublicAPIOperations(t *testing.T) {
	a, b := connectPair(t, &iwarp.ConnOptions{PrivateData: []byte("hello")}, &iwarp.ConnOptions{PrivateData: []byte("welcome")})
	if got := string(a.qp.Attributes().PeerPrivateData); got != "welcome" {
		t.Errorf("client saw private data %q", got)
	}
	if got := string(b.qp.Attributes().PeerPrivateData); got != "hello" {
		t.Errorf("server saw private data %q", got)
	}
	attrs := a.qp.Attributes()
	if !attrs.CRC || attrs.MPARevision != 2 || !attrs.P2P {
		t.Errorf("negotiated %+v", attrs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	const n = 1 << 20
	target := make([]byte, n)
	tmr, err := b.pd.RegisterMemory(target, iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i * 7)
	}
	smr, _ := a.pd.RegisterMemory(src, 0)
	if err := a.qp.Write(ctx, tmr.Remote(), smr.SGE(0, n)); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, n)
	bmr, _ := a.pd.RegisterMemory(back, iwarp.AccessLocalWrite)
	if err := a.qp.Read(ctx, tmr.Remote(), bmr.SGE(0, n)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, src) {
		t.Fatal("Write then Read did not round-trip")
	}
	// target is only looked at after a completion on b's side (the
	// receive below): that is what orders the one-sided Write's placement
	// before the application's read (docs/semantics.md).

	// Send / receive with the remote-buffer encoding as payload.
	rbuf := make([]byte, 64)
	rmr, _ := b.pd.RegisterMemory(rbuf, iwarp.AccessLocalWrite)
	if err := b.qp.PostRecv(iwarp.RecvWR{ID: 77, SGL: []iwarp.SGE{rmr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	adv, _ := tmr.Remote().MarshalBinary()
	amr, _ := a.pd.RegisterMemory(adv, 0)
	if err := a.qp.PostSend(iwarp.SendWR{ID: 5, Op: iwarp.OpSend, Flags: iwarp.Signaled | iwarp.Solicited, SGL: []iwarp.SGE{amr.SGE(0, len(adv))}}); err != nil {
		t.Fatal(err)
	}
	c, err := a.cq.Next(ctx)
	if err != nil || c.ID != 5 || c.Status != iwarp.StatusSuccess || c.QPNum != a.qp.Num() {
		t.Fatalf("send completion %+v %v", c, err)
	}
	c, err = b.cq.Next(ctx)
	if err != nil || c.ID != 77 || c.Op != iwarp.OpRecv || c.Len != 16 || !c.Solicited {
		t.Fatalf("recv completion %+v %v", c, err)
	}
	if !bytes.Equal(target, src) {
		t.Fatal("Write not visible at the target after a later Send completed there")
	}
	var rb iwarp.RemoteBuffer
	if err := rb.UnmarshalBinary(rbuf[:16]); err != nil || rb != tmr.Remote() {
		t.Fatalf("advertisement %+v %v", rb, err)
	}

	// Orderly disconnect: the peer sees ErrPeerDisconnected.
	if err := a.qp.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.qp.Done():
	case <-ctx.Done():
		t.Fatal("peer did not notice the disconnect")
	}
	if err := b.qp.Err(); !errors.Is(err, iwarp.ErrPeerDisconnected) {
		t.Fatalf("peer error %v", err)
	}
}

func TestPublicAPIReject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			req.Reject([]byte("go away"))
		}
	}()
	a := newEndpoint(t)
	err = a.qp.Connect(ctx, "tcp", ln.Addr().String(), nil)
	var re *iwarp.RejectedError
	if !errors.As(err, &re) || string(re.PrivateData) != "go away" {
		t.Fatalf("got %v", err)
	}
}

func TestPublicAPITerminate(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	buf := make([]byte, 64)
	mr, _ := a.pd.RegisterMemory(buf, 0)
	// A Write to an STag the peer never registered.
	bogus := iwarp.RemoteBuffer{STag: 0x12345678, TO: 0, Len: 64}
	if err := a.qp.PostSend(iwarp.SendWR{ID: 1, Op: iwarp.OpWrite, Flags: iwarp.Signaled, SGL: []iwarp.SGE{mr.SGE(0, 64)}, Remote: bogus}); err != nil {
		t.Fatal(err)
	}
	wantTerminated(t, ctx, b, true, iwarp.TermDDPInvalidSTag)
	wantTerminated(t, ctx, a, false, iwarp.TermDDPInvalidSTag)
}

func TestEvents(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.qp.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[*iwarp.QP]iwarp.EventType{a.qp: iwarp.EventDisconnected, b.qp: iwarp.EventPeerDisconnected}
	for _, ep := range []*endpoint{a, b} {
		select {
		case ev := <-ep.dev.Events():
			if ev.QP != ep.qp || ev.Type != want[ep.qp] {
				t.Errorf("event %v for %p, want %v", ev.Type, ev.QP, want[ep.qp])
			}
		case <-ctx.Done():
			t.Fatal("no event")
		}
	}
}

// TestCallerSuppliedTransport: a caller-supplied dialer and listener carry
// the connection (here they count the connections they made).
func TestCallerSuppliedTransport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := iwarp.NewListener(raw, nil)
	defer ln.Close()
	a, b := newEndpoint(t), newEndpoint(t)
	defer a.qp.Close()
	defer b.qp.Close()
	dials := 0
	opts := &iwarp.ConnOptions{Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials++
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	if cerr, aerr := dialAccept(ctx, ln, "tcp", raw.Addr().String(), a.qp, b.qp, opts, nil); cerr != nil || aerr != nil {
		t.Fatalf("connect: %v, accept: %v", cerr, aerr)
	}
	if dials != 1 {
		t.Fatalf("dialer used %d times", dials)
	}
	if err := a.qp.Send(ctx); err == nil {
		// no receive posted at b: the Send is fatal there, which proves the
		// bytes went through the supplied transport
		<-b.qp.Done()
	}
}

// wantTerminated waits until ep's QP is torn down and checks that it ended
// with a Terminate carrying code, which ep sent (sent) or received.
func wantTerminated(t *testing.T, ctx context.Context, ep *endpoint, sent bool, code iwarp.TermCode) {
	t.Helper()
	select {
	case <-ep.qp.Done():
	case <-ctx.Done():
		t.Fatalf("QP not torn down (waiting for Terminate %v, sent %v)", code, sent)
	}
	var te *iwarp.TerminateError
	if err := ep.qp.Err(); !errors.As(err, &te) || te.Sent != sent || te.Code != code || !errors.Is(err, iwarp.ErrTerminated) {
		t.Fatalf("QP error %v, want Terminate %v (sent %v)", err, code, sent)
	}
}
