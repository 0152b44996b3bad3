package perf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp"
)

// Endpoint is the client's view of a server (Serve).
type Endpoint struct {
	iwarpAddr, tcpAddr string
	dev                *iwarp.Device
	pd                 *iwarp.PD
}

// NewEndpoint returns the client of the server whose iWARP listener is at
// iwarpAddr and raw TCP listener at tcpAddr ("": the next port).
func NewEndpoint(iwarpAddr, tcpAddr string) (*Endpoint, error) {
	ep := &Endpoint{iwarpAddr: iwarpAddr, tcpAddr: tcpAddr}
	if tcpAddr == "" {
		host, port, err := net.SplitHostPort(iwarpAddr)
		if err != nil {
			return nil, err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("port %q in %q is not a number", port, iwarpAddr)
		}
		ep.tcpAddr = net.JoinHostPort(host, strconv.Itoa(p+1))
	}
	ep.dev = iwarp.NewDevice(nil)
	var err error
	ep.pd, err = ep.dev.AllocPD()
	return ep, err
}

// conn is the client's end of one test connection.
type conn struct {
	qp     *iwarp.QP
	cq     *iwarp.CQ
	local  *iwarp.MR // payload slots (source, sink, or echo target)
	ctrl   *iwarp.MR // receive slots for credits and the report
	remote iwarp.RemoteBuffer
	start  sysSnapshot // the server's counters when it accepted
	crwrs  []iwarp.RecvWR
}

// ctrlRecvs is how many control receives (credits, report) a client
// keeps posted.
const ctrlRecvs = 16

// dial connects one QP for descriptor d with localLen bytes of local
// payload memory, depth send WRs and recvs receives of its own.
func (ep *Endpoint) dial(ctx context.Context, d desc, localLen, depth, recvs int) (*conn, error) {
	c := &conn{}
	ok := false
	defer func() {
		if !ok {
			c.close()
		}
	}()
	var err error
	if c.cq, err = ep.dev.NewCQ(depth+recvs, nil); err != nil {
		return nil, err
	}
	ord := min(max(depth, 1), 128)
	cfg := &iwarp.QPConfig{SendCQ: c.cq, RecvCQ: c.cq, SendQueueDepth: depth, RecvQueueDepth: recvs, MaxSGE: 1, IRD: 1, ORD: ord}
	if d.op == opIdle {
		cfg = &iwarp.QPConfig{SendCQ: c.cq, RecvCQ: c.cq}
	}
	if c.qp, err = ep.pd.NewQP(cfg); err != nil {
		return nil, err
	}
	if localLen > 0 {
		if c.local, err = ep.pd.RegisterMemory(alignedBuf(localLen), iwarp.AccessLocalWrite|iwarp.AccessRemoteWrite); err != nil {
			return nil, err
		}
		d.remote = c.local.Remote()
	}
	if d.op != opIdle {
		if c.ctrl, err = ep.pd.RegisterMemory(make([]byte, ctrlRecvs*reportLen), iwarp.AccessLocalWrite); err != nil {
			return nil, err
		}
		c.crwrs = make([]iwarp.RecvWR, ctrlRecvs)
		for i := range c.crwrs {
			c.crwrs[i] = iwarp.RecvWR{ID: 1<<32 + uint64(i), SGL: []iwarp.SGE{c.ctrl.SGE(i*reportLen, reportLen)}}
		}
	}
	opts := &iwarp.ConnOptions{DisableCRC: d.flags&flagCRC == 0, PrivateData: d.encode()}
	if err := c.qp.Connect(ctx, "tcp", ep.iwarpAddr, opts); err != nil {
		return nil, err
	}
	r, err := decodeReply(c.qp.Attributes().PeerPrivateData)
	if err != nil {
		return nil, err
	}
	c.remote, c.start = r.remote, r.sys
	ok = true
	return c, nil
}

// postCtrl posts control receive i (0 .. ctrlRecvs-1).
func (c *conn) postCtrl(i int) error { return c.qp.PostRecv(c.crwrs[i]) }

// isCtrl reports whether a receive completion is a control receive, and
// which.
func isCtrl(comp *iwarp.Completion) (int, bool) {
	if comp.ID>>32 != 1 {
		return 0, false
	}
	return int(comp.ID & 0xffffffff), true
}

// finish sends "done" (a zero-length Send the server answers with its
// report once everything before it has arrived) and waits for the report.
// A control receive must be posted for it; credits and echoes arriving
// meanwhile are ignored.
func (c *conn) finish(ctx context.Context) (report, error) {
	if err := c.qp.PostSend(iwarp.SendWR{ID: 1 << 40, Op: iwarp.OpSend, Flags: iwarp.Signaled}); err != nil {
		return report{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		comp, err := c.cq.Next(ctx)
		if err != nil {
			return report{}, err
		}
		if comp.Status != iwarp.StatusSuccess {
			return report{}, fmt.Errorf("waiting for the report: %v completion %v: %v", comp.Op, comp.Status, comp.Err)
		}
		if i, ok := isCtrl(&comp); ok && comp.Op == iwarp.OpRecv && !comp.HasImmediate && comp.Len == reportLen {
			return decodeReport(c.ctrl.Bytes()[i*reportLen:]), nil
		}
	}
}

// stat asks the server for its counters after a garbage collection.
func (ep *Endpoint) stat(ctx context.Context) (sysSnapshot, error) {
	r, err := ep.query(ctx, 0)
	return r.sys, err
}

// query asks the server for its counters after a garbage collection, its
// file descriptors and its idle QPs; flags may be flagRelease.
func (ep *Endpoint) query(ctx context.Context, flags uint8) (reply, error) {
	qp, cq, err := ep.tinyQP()
	if err != nil {
		return reply{}, err
	}
	defer cq.Close()
	defer qp.Close()
	d := desc{op: opStat, flags: flags, batch: 1}
	err = qp.Connect(ctx, "tcp", ep.iwarpAddr, &iwarp.ConnOptions{PrivateData: d.encode()})
	var rej *iwarp.RejectedError
	if !errors.As(err, &rej) {
		return reply{}, fmt.Errorf("stat: %v", err)
	}
	return decodeReply(rej.PrivateData)
}

func (ep *Endpoint) tinyQP() (*iwarp.QP, *iwarp.CQ, error) {
	cq, err := ep.dev.NewCQ(4, nil)
	if err != nil {
		return nil, nil, err
	}
	qp, err := ep.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 2, RecvQueueDepth: 2})
	if err != nil {
		cq.Close()
	}
	return qp, cq, err
}

func (c *conn) close() {
	if c.qp != nil {
		c.qp.Close()
	}
	for _, mr := range []*iwarp.MR{c.local, c.ctrl} {
		if mr != nil {
			_ = mr.Close()
		}
	}
	if c.cq != nil {
		c.cq.Close()
	}
}

// alignedBuf returns n bytes at an 8-byte aligned address, as the targets
// of remote atomics must be.
func alignedBuf(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}
