// Package rdmaxchg speaks the protocol of librdmacm's example programs
// rdma_server and rdma_client (rdma-core, librdmacm/examples), so that
// `iwarp rdma-server` and `iwarp rdma-client` interoperate with them: the
// client posts a receive of 16 bytes, connects, Sends 16 bytes and waits
// for both its Send and the server's 16-byte answer; the server posts a
// receive of 16 bytes, accepts, waits for the client's message and Sends 16
// bytes back. Each side checks that exactly 16 bytes arrived. librdmacm's
// examples send 16 zero bytes; this package sends its own pattern, so each
// side can tell which peer it talked to (Describe).
package rdmaxchg

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/goiwarp/iwarp"
)

// DefaultPort is the port of rdma_server and rdma_client.
const DefaultPort = 7471

// MsgLen is the size of both messages.
const MsgLen = 16

// ExchangeTimeout bounds the server's exchange once it accepted a client
// (the client's run is bounded by the caller's context).
const ExchangeTimeout = 15 * time.Second

// pattern is what this side sends.
var pattern = []byte("iwarp-rdma-xchg!")

// end is one side: a QP with a 16-byte receive posted and a 16-byte send
// buffer.
type end struct {
	cq         *iwarp.CQ
	qp         *iwarp.QP
	recv, send *iwarp.MR
}

func newEnd() (*end, error) {
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	e := &end{}
	if e.cq, err = dev.NewCQ(4, nil); err != nil {
		return nil, err
	}
	if e.qp, err = pd.NewQP(&iwarp.QPConfig{SendCQ: e.cq, RecvCQ: e.cq, SendQueueDepth: 1, RecvQueueDepth: 1, IRD: 1, ORD: 1}); err != nil {
		return nil, err
	}
	if e.recv, err = pd.RegisterMemory(make([]byte, MsgLen), iwarp.AccessLocalWrite); err != nil {
		return nil, err
	}
	if e.send, err = pd.RegisterMemory(bytes.Clone(pattern), 0); err != nil {
		return nil, err
	}
	return e, e.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{e.recv.SGE(0, MsgLen)}})
}

// exchange runs the client's (sendFirst) or the server's half and returns
// the 16 bytes received.
func (e *end) exchange(ctx context.Context, sendFirst bool) ([]byte, error) {
	if sendFirst {
		if err := e.qp.Send(ctx, e.send.SGE(0, MsgLen)); err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
	}
	c, err := e.cq.Next(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting for the peer's message: %w", err)
	}
	if c.Op != iwarp.OpRecv || c.Status != iwarp.StatusSuccess {
		return nil, fmt.Errorf("the receive completed with %v: %w", c.Status, c.Err)
	}
	if c.Len != MsgLen {
		return nil, fmt.Errorf("received %d bytes, want %d", c.Len, MsgLen)
	}
	if !sendFirst {
		if err := e.qp.Send(ctx, e.send.SGE(0, MsgLen)); err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
	}
	return bytes.Clone(e.recv.Bytes()), nil
}

// Serve waits on ln for one client, exchanges the messages with it and
// disconnects. It returns what the client sent and its address.
func Serve(ctx context.Context, ln *iwarp.Listener) (got []byte, peer net.Addr, err error) {
	e, err := newEnd()
	if err != nil {
		return nil, nil, err
	}
	defer e.qp.Close()
	req, err := ln.Accept(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("waiting for a client: %w", err)
	}
	peer = req.RemoteAddr()
	xctx, cancel := context.WithTimeout(ctx, ExchangeTimeout)
	defer cancel()
	if err := req.Accept(xctx, e.qp, nil); err != nil {
		return nil, peer, fmt.Errorf("accepting %v: %w", peer, err)
	}
	if got, err = e.exchange(xctx, false); err != nil {
		return nil, peer, err
	}
	return got, peer, e.qp.Disconnect(xctx)
}

// Dial connects to addr, exchanges the messages and disconnects. It
// returns what the server sent.
func Dial(ctx context.Context, addr string) ([]byte, error) {
	e, err := newEnd()
	if err != nil {
		return nil, err
	}
	defer e.qp.Close()
	if err := e.qp.Connect(ctx, "tcp", addr, nil); err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	got, err := e.exchange(ctx, true)
	if err != nil {
		return nil, err
	}
	return got, e.qp.Disconnect(ctx)
}

// Describe says what arrived: this package's pattern, librdmacm's 16 zero
// bytes, or other bytes.
func Describe(b []byte) string {
	switch {
	case bytes.Equal(b, pattern):
		return fmt.Sprintf("%q (iwarp's pattern)", b)
	case len(b) == MsgLen && bytes.Count(b, []byte{0}) == MsgLen:
		return "16 zero bytes (librdmacm's example message)"
	}
	return fmt.Sprintf("% x", b)
}
