package rdmaxchg

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

type served struct {
	got  []byte
	peer net.Addr
	err  error
}

// serve starts Serve on a loopback listener.
func serve(t *testing.T) (string, <-chan served) {
	t.Helper()
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan served, 1)
	go func() {
		defer ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var s served
		s.got, s.peer, s.err = Serve(ctx, ln)
		done <- s
	}()
	return ln.Addr().String(), done
}

// TestExchange: our client and server exchange their 16-byte messages and
// each recognises the other's pattern.
func TestExchange(t *testing.T) {
	addr, done := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := Dial(ctx, addr)
	if err != nil || Describe(got) != `"iwarp-rdma-xchg!" (iwarp's pattern)` {
		t.Fatalf("client: %q, %v", got, err)
	}
	s := <-done
	if s.err != nil || Describe(s.got) != `"iwarp-rdma-xchg!" (iwarp's pattern)` || s.peer == nil {
		t.Fatalf("server: %q from %v, %v", s.got, s.peer, s.err)
	}
}

// TestLibrdmacmPeer: a client that sends what librdmacm's rdma_client
// sends (16 zero bytes) is recognised; one that sends 8 bytes fails the
// server's check.
func TestLibrdmacmPeer(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{16, "16 zero bytes (librdmacm's example message)"}, {8, "received 8 bytes, want 16"}} {
		addr, done := serve(t)
		if err := rawClient(addr, c.n); err != nil {
			t.Fatal(err)
		}
		s := <-done
		if c.n == MsgLen && (s.err != nil || Describe(s.got) != c.want) || c.n != MsgLen && (s.err == nil || !strings.Contains(s.err.Error(), c.want)) {
			t.Errorf("%d bytes: %q, %v; want %s", c.n, s.got, s.err, c.want)
		}
	}
	if got := Describe([]byte{1, 2}); got != "01 02" {
		t.Errorf("Describe: %q", got)
	}
}

// rawClient connects to addr and Sends n zero bytes, then waits for the
// connection to end.
func rawClient(addr string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	cq, err := dev.NewCQ(4, nil)
	if err != nil {
		return err
	}
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 1, RecvQueueDepth: 1})
	if err != nil {
		return err
	}
	defer qp.Close()
	buf, err := pd.RegisterMemory(make([]byte, MsgLen), iwarp.AccessLocalWrite)
	if err != nil {
		return err
	}
	if err := qp.PostRecv(iwarp.RecvWR{SGL: []iwarp.SGE{buf.SGE(0, MsgLen)}}); err != nil {
		return err
	}
	if err := qp.Connect(ctx, "tcp", addr, nil); err != nil {
		return err
	}
	if err := qp.Send(ctx, buf.SGE(0, n)); err != nil {
		return err
	}
	select {
	case <-qp.Done():
	case <-ctx.Done():
	}
	return nil
}

// TestDialRefused: nothing listens: the client says so.
func TestDialRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if _, err := Dial(context.Background(), addr); err == nil || !strings.Contains(err.Error(), "connecting to "+addr) {
		t.Errorf("Dial to a closed port: %v", err)
	}
}
