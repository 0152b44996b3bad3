package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/goiwarp/iwarp"
)

// rdma-server and rdma-client speak the protocol of librdmacm's example
// programs rdma_server and rdma_client (rdma-core, librdmacm/examples): the
// client posts a 16-byte receive, connects, Sends 16 bytes and waits for
// both its Send and the server's 16-byte answer; the server posts a 16-byte
// receive, accepts, waits for the client's message and Sends 16 bytes back.
// Port 7471 is theirs too. Each side verifies that exactly 16 bytes
// arrived; ours also checks that our own peer's bytes are the pattern it
// sends.

func init() {
	register(&command{name: "rdma-server", short: "server of librdmacm's rdma_server/rdma_client example protocol", run: runRdmaServer})
	register(&command{name: "rdma-client", short: "client of librdmacm's rdma_server/rdma_client example protocol", run: runRdmaClient})
}

// rdmaMsgLen is the size of both messages.
const rdmaMsgLen = 16

// rdmaPattern is what our side sends (librdmacm's examples send zeros).
var rdmaPattern = []byte("iwarp-rdma-xchg!")

// rdmaEnd is one side: a QP with a 16-byte receive posted and a 16-byte
// send buffer.
type rdmaEnd struct {
	dev        *iwarp.Device
	cq         *iwarp.CQ
	qp         *iwarp.QP
	recv, send *iwarp.MR
}

func newRdmaEnd() (*rdmaEnd, error) {
	e := &rdmaEnd{dev: iwarp.NewDevice(nil)}
	pd, err := e.dev.AllocPD()
	if err != nil {
		return nil, err
	}
	if e.cq, err = e.dev.NewCQ(4, nil); err != nil {
		return nil, err
	}
	if e.qp, err = pd.NewQP(&iwarp.QPConfig{SendCQ: e.cq, RecvCQ: e.cq, SendQueueDepth: 1, RecvQueueDepth: 1, IRD: 1, ORD: 1}); err != nil {
		return nil, err
	}
	if e.recv, err = pd.RegisterMemory(make([]byte, rdmaMsgLen), iwarp.AccessLocalWrite); err != nil {
		return nil, err
	}
	if e.send, err = pd.RegisterMemory(append([]byte(nil), rdmaPattern...), 0); err != nil {
		return nil, err
	}
	return e, e.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{e.recv.SGE(0, rdmaMsgLen)}})
}

// exchange runs the client's (sendFirst) or the server's half: it returns
// the 16 bytes received.
func (e *rdmaEnd) exchange(ctx context.Context, sendFirst bool) ([]byte, error) {
	if sendFirst {
		if err := e.qp.Send(ctx, e.send.SGE(0, rdmaMsgLen)); err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
	}
	c, err := e.cq.Next(ctx)
	if err != nil {
		return nil, err
	}
	if c.Op != iwarp.OpRecv || c.Status != iwarp.StatusSuccess {
		return nil, fmt.Errorf("receive completed with %v: %v", c.Status, c.Err)
	}
	if c.Len != rdmaMsgLen {
		return nil, fmt.Errorf("received %d bytes, want %d", c.Len, rdmaMsgLen)
	}
	if !sendFirst {
		if err := e.qp.Send(ctx, e.send.SGE(0, rdmaMsgLen)); err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
	}
	return e.recv.Bytes(), nil
}

// describe says what arrived: our pattern, all zeros (librdmacm's
// examples), or other bytes.
func describe(b []byte) string {
	switch {
	case string(b) == string(rdmaPattern):
		return fmt.Sprintf("%q (iwarp's pattern)", b)
	case string(b) == string(make([]byte, len(b))):
		return "16 zero bytes (librdmacm's example message)"
	}
	return fmt.Sprintf("% x", b)
}

func runRdmaServer(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdma-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("a", "0.0.0.0", "address to listen on")
	port := fs.String("p", "7471", "port")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintln(stdout, "rdma-server: start")
	if err := rdmaServer(ctx, net.JoinHostPort(*addr, *port), stdout); err != nil {
		fmt.Fprintf(stderr, "iwarp rdma-server: %v\n", err)
		fmt.Fprintln(stdout, "rdma-server: end 1")
		return 1
	}
	fmt.Fprintln(stdout, "rdma-server: end 0")
	return 0
}

func rdmaServer(ctx context.Context, addr string, w io.Writer) error {
	ln, err := iwarp.Listen("tcp", addr, nil)
	if err != nil {
		return err
	}
	defer ln.Close()
	e, err := newRdmaEnd()
	if err != nil {
		return err
	}
	defer e.qp.Close()
	req, err := ln.Accept(ctx)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := req.Accept(actx, e.qp, nil); err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	got, err := e.exchange(actx, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "rdma-server: received %s from %v\n", describe(got), req.RemoteAddr())
	return e.qp.Disconnect(actx)
}

func runRdmaClient(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdma-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("s", "127.0.0.1", "server address")
	port := fs.String("p", "7471", "port")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fmt.Fprintln(stdout, "rdma-client: start")
	if err := rdmaClient(ctx, net.JoinHostPort(*server, *port), stdout); err != nil {
		fmt.Fprintf(stderr, "iwarp rdma-client: %v\n", err)
		fmt.Fprintln(stdout, "rdma-client: end 1")
		return 1
	}
	fmt.Fprintln(stdout, "rdma-client: end 0")
	return 0
}

func rdmaClient(ctx context.Context, addr string, w io.Writer) error {
	e, err := newRdmaEnd()
	if err != nil {
		return err
	}
	defer e.qp.Close()
	if err := e.qp.Connect(ctx, "tcp", addr, nil); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	got, err := e.exchange(ctx, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "rdma-client: received %s\n", describe(got))
	return e.qp.Disconnect(ctx)
}
