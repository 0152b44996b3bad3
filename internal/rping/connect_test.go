package rping

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddrPort(l.Addr().String())
	l.Close()
	return addr
}

// TestConnectFailures: a client whose server is not there, or does not
// answer, or refuses, ends with rping's lines and an error saying why,
// within its timeout.
func TestConnectFailures(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		// Accept and hold every connection, answering nothing.
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	rejecting, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rejecting.Close()
	go func() {
		for {
			req, err := rejecting.Accept(context.Background())
			if err != nil {
				return
			}
			_ = req.Reject([]byte("no"))
		}
	}()

	for _, c := range []struct {
		name   string
		addr   netip.AddrPort
		stderr string
		err    string
	}{
		{"refused", closedPort(t), "rdma_connect: Connection refused\nconnect error -1\n", "cannot connect to 127.0.0.1:"},
		{"silent", netip.MustParseAddrPort(silent.Addr().String()),
			"cma event RDMA_CM_EVENT_UNREACHABLE, error -110\nwait for CONNECTED state 4\nconnect error -1\n",
			"timed out after 300ms waiting for the MPA Reply from 127.0.0.1:\\d+: the peer accepted the TCP connection but did not answer the MPA Request"},
		{"rejected", netip.MustParseAddrPort(rejecting.Addr().String()),
			"cma event RDMA_CM_EVENT_REJECTED, error -111\nwait for CONNECTED state 4\nconnect error -1\n", "rejected the connection"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := newSide(Options{Count: 1, Timeout: 300 * time.Millisecond})
			start := time.Now()
			err := Dial(context.Background(), c.addr, netip.Addr{}, &cl.o)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v with a 300ms timeout", took)
			}
			if err == nil || !regexp.MustCompile(c.err).MatchString(err.Error()) {
				t.Errorf("error %v, want %q", err, c.err)
			}
			if cl.err.String() != c.stderr {
				t.Errorf("stderr %q, want %q", cl.err.String(), c.stderr)
			}
		})
	}
}

// TestSourceAddress: -I binds the client to a source address; one that is
// not the host's fails the address resolution, as rdma_resolve_addr does.
func TestSourceAddress(t *testing.T) {
	srv := newSide(Options{})
	addr, done := listen(t, srv)
	cl := newSide(Options{Count: 1})
	if err := Dial(context.Background(), addr, netip.MustParseAddr("127.0.0.1"), &cl.o); err != nil {
		t.Fatalf("from 127.0.0.1: %v\n%s", err, cl.err.String())
	}
	if err := serverResult(t, done); err != nil {
		t.Fatal(err)
	}
	cl = newSide(Options{Count: 1})
	err := Dial(context.Background(), addr, netip.MustParseAddr("192.0.2.1"), &cl.o) // TEST-NET-1
	if err == nil || cl.err.String() != "rdma_resolve_addr: Cannot assign requested address\n" {
		t.Errorf("from 192.0.2.1: %v, stderr %q", err, cl.err.String())
	}
}

// TestDebugEvents: -d prints the connection events each side observes, in
// rping's words and order.
func TestDebugEvents(t *testing.T) {
	srv := newSide(Options{Debug: true})
	addr, done := listen(t, srv)
	cl := newSide(Options{Count: 1, Debug: true})
	if err := Dial(context.Background(), addr, netip.Addr{}, &cl.o); err != nil {
		t.Fatalf("client: %v\n%s", err, cl.err.String())
	}
	if err := serverResult(t, done); err != nil {
		t.Fatal(err)
	}
	events := regexp.MustCompile(`(?m)^cma_event type (\S+) cma_id (0x[0-9a-f]+) \((parent|child)\)$`)
	list := func(out string) string {
		var l []string
		ids := map[string]bool{}
		for _, m := range events.FindAllStringSubmatch(out, -1) {
			l = append(l, m[1]+" "+m[3])
			ids[m[2]] = true
		}
		if len(ids) != 1 {
			t.Errorf("events name %d cma_ids, want the connection's one:\n%s", len(ids), out)
		}
		return strings.Join(l, ", ")
	}
	if got, want := list(cl.out.String()), "RDMA_CM_EVENT_ADDR_RESOLVED parent, RDMA_CM_EVENT_ROUTE_RESOLVED parent, "+
		"RDMA_CM_EVENT_ESTABLISHED parent, RDMA_CM_EVENT_DISCONNECTED parent"; got != want {
		t.Errorf("client events: %s\nwant %s\noutput:\n%s", got, want, cl.out.String())
	}
	if got, want := list(srv.out.String()), "RDMA_CM_EVENT_CONNECT_REQUEST child, RDMA_CM_EVENT_ESTABLISHED child, "+
		"RDMA_CM_EVENT_DISCONNECTED child"; got != want {
		t.Errorf("server events: %s\nwant %s\noutput:\n%s", got, want, srv.out.String())
	}
	for _, line := range []string{"rdma_connect successful\n", "RDMA addr 0 rkey ", " len 64\n", "recv completion\n"} {
		if !strings.Contains(cl.out.String(), line) {
			t.Errorf("client output lacks %q:\n%s", line, cl.out.String())
		}
	}
	for _, line := range []string{"rdma_bind_addr successful\nrdma_listen\n", "accepting client connection request\n",
		"server posted rdma read req \n", "rdma read completion\n", "server rdma write complete \n", " len 64 from peer\n"} {
		if !strings.Contains(srv.out.String(), line) {
			t.Errorf("server output lacks %q:\n%s", line, srv.out.String())
		}
	}
}

// TestClientSeesBoundsViolation: a server that writes more than the
// client's sink holds (what Linux siw's server did to a client advertising
// 100 bytes to its 64-byte buffer, the other way round) makes the client's
// stack answer with Terminate DDP/1/0x01. rping, which does not read the
// QP's asynchronous events, would take the connection's end for an orderly
// disconnect; here the run fails and says why.
func TestClientSeesBoundsViolation(t *testing.T) {
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() { srvErr <- badServer(ln) }()
	cl := newSide(Options{Count: 1})
	err = Dial(context.Background(), netip.MustParseAddrPort(ln.Addr().String()), netip.Addr{}, &cl.o)
	var te *iwarp.TerminateError
	if !errors.As(err, &te) || !te.Sent || te.Code != iwarp.TermDDPBaseBounds {
		t.Fatalf("error %v, want our Terminate %v", err, iwarp.TermDDPBaseBounds)
	}
	if err := <-srvErr; err != nil {
		t.Errorf("the misbehaving server: %v", err)
	}
	if want := "client DISCONNECT EVENT...\nwait for RDMA_WRITE_COMPLETE state 11\nrping client failed: -1\n"; cl.err.String() != want {
		t.Errorf("stderr %q, want %q", cl.err.String(), want)
	}
}

// badServer answers one rping client like rping's server, except that it
// RDMA Writes 100 bytes into the client's 64-byte sink.
func badServer(ln *iwarp.Listener) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := ln.Accept(ctx)
	if err != nil {
		return err
	}
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	cq, err := dev.NewCQ(8, nil)
	if err != nil {
		return err
	}
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 4, RecvQueueDepth: 2, IRD: 1, ORD: 1})
	if err != nil {
		return err
	}
	defer qp.Close()
	msg, err := pd.RegisterMemory(make([]byte, advLen), iwarp.AccessLocalWrite)
	if err != nil {
		return err
	}
	big, err := pd.RegisterMemory(make([]byte, 100), 0)
	if err != nil {
		return err
	}
	zero, err := pd.RegisterMemory(make([]byte, advLen), 0)
	if err != nil {
		return err
	}
	recv := func() (adv iwarp.RemoteBuffer, err error) {
		c, err := cq.Next(ctx)
		if err == nil && (c.Op != iwarp.OpRecv || c.Status != iwarp.StatusSuccess) {
			err = fmt.Errorf("completion %+v", c)
		}
		if err == nil {
			err = adv.UnmarshalBinary(msg.Bytes())
		}
		if err == nil {
			err = qp.PostRecv(iwarp.RecvWR{SGL: []iwarp.SGE{msg.SGE(0, advLen)}})
		}
		return adv, err
	}
	if err := qp.PostRecv(iwarp.RecvWR{SGL: []iwarp.SGE{msg.SGE(0, advLen)}}); err != nil {
		return err
	}
	if err := req.Accept(ctx, qp, nil); err != nil {
		return err
	}
	if _, err := recv(); err != nil { // the start buffer, not read
		return err
	}
	if err := qp.Send(ctx, zero.SGE(0, advLen)); err != nil {
		return err
	}
	sink, err := recv()
	if err != nil {
		return err
	}
	if err := qp.Write(ctx, sink, big.SGE(0, 100)); err != nil {
		return err
	}
	<-qp.Done() // the client's Terminate
	return nil
}
