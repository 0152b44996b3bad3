package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/goiwarp/iwarp"
)

// perfEndpoint is the client's view of a perf server.
type perfEndpoint struct {
	iwarpAddr, tcpAddr string
	dev                *iwarp.Device
	pd                 *iwarp.PD
}

// newPerfEndpoint takes "IWARP-ADDR [TCP-ADDR]"; without a TCP address
// raw TCP is on the next port.
func newPerfEndpoint(addrs string) (*perfEndpoint, error) {
	f := strings.Fields(addrs)
	if len(f) == 0 {
		return nil, errors.New("no server address")
	}
	ep := &perfEndpoint{iwarpAddr: f[0]}
	if len(f) > 1 {
		ep.tcpAddr = f[1]
	} else {
		host, port, err := net.SplitHostPort(f[0])
		if err != nil {
			return nil, err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, err
		}
		ep.tcpAddr = net.JoinHostPort(host, strconv.Itoa(p+1))
	}
	ep.dev = iwarp.NewDevice(nil)
	var err error
	ep.pd, err = ep.dev.AllocPD()
	return ep, err
}

// perfConn is the client's end of one test connection.
type perfConn struct {
	qp     *iwarp.QP
	cq     *iwarp.CQ
	local  *iwarp.MR // payload slots (source, sink, or echo target)
	ctrl   *iwarp.MR // receive slots for credits and the report
	remote iwarp.RemoteBuffer
	start  sysSnapshot // the server's counters when it accepted
	crwrs  []iwarp.RecvWR
}

// perfCtrlRecvs is how many control receives (credits, report) a client
// keeps posted.
const perfCtrlRecvs = 16

// dial connects one QP for descriptor d with localLen bytes of local
// payload memory, depth send WRs and recvs receives of its own.
func (ep *perfEndpoint) dial(ctx context.Context, d perfDesc, localLen, depth, recvs int) (*perfConn, error) {
	c := &perfConn{}
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
	if d.op == perfIdle {
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
	if d.op != perfIdle {
		if c.ctrl, err = ep.pd.RegisterMemory(make([]byte, perfCtrlRecvs*perfReportLen), iwarp.AccessLocalWrite); err != nil {
			return nil, err
		}
		c.crwrs = make([]iwarp.RecvWR, perfCtrlRecvs)
		for i := range c.crwrs {
			c.crwrs[i] = iwarp.RecvWR{ID: 1<<32 + uint64(i), SGL: []iwarp.SGE{c.ctrl.SGE(i*perfReportLen, perfReportLen)}}
		}
	}
	opts := &iwarp.ConnOptions{NoCRC: d.flags&perfFlagCRC == 0, PrivateData: d.encode()}
	if err := c.qp.Connect(ctx, "tcp", ep.iwarpAddr, opts); err != nil {
		return nil, err
	}
	r, err := decodePerfReply(c.qp.Attributes().PeerPrivateData)
	if err != nil {
		return nil, err
	}
	c.remote, c.start = r.remote, r.sys
	ok = true
	return c, nil
}

// postCtrl posts control receive i (0 .. perfCtrlRecvs-1).
func (c *perfConn) postCtrl(i int) error { return c.qp.PostRecv(c.crwrs[i]) }

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
func (c *perfConn) finish(ctx context.Context) (perfReport, error) {
	if err := c.qp.PostSend(iwarp.SendWR{ID: 1 << 40, Op: iwarp.OpSend, Flags: iwarp.Signaled}); err != nil {
		return perfReport{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		comp, err := c.cq.Next(ctx)
		if err != nil {
			return perfReport{}, err
		}
		if comp.Status != iwarp.StatusSuccess {
			return perfReport{}, fmt.Errorf("waiting for the report: %v completion %v: %v", comp.Op, comp.Status, comp.Err)
		}
		if i, ok := isCtrl(&comp); ok && comp.Op == iwarp.OpRecv && !comp.HasImmediate && comp.Len == perfReportLen {
			return decodePerfReport(c.ctrl.Bytes()[i*perfReportLen:]), nil
		}
	}
}

// stat asks the server for its counters after a garbage collection.
func (ep *perfEndpoint) stat(ctx context.Context) (sysSnapshot, error) {
	qp, cq, err := ep.tinyQP()
	if err != nil {
		return sysSnapshot{}, err
	}
	defer cq.Close()
	defer qp.Close()
	d := perfDesc{op: perfStat, batch: 1}
	err = qp.Connect(ctx, "tcp", ep.iwarpAddr, &iwarp.ConnOptions{PrivateData: d.encode()})
	var rej *iwarp.RejectedError
	if !errors.As(err, &rej) {
		return sysSnapshot{}, fmt.Errorf("stat: %v", err)
	}
	r, err := decodePerfReply(rej.PrivateData)
	return r.sys, err
}

func (ep *perfEndpoint) tinyQP() (*iwarp.QP, *iwarp.CQ, error) {
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

func (c *perfConn) close() {
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
