package perf

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp"
)

// DefaultPort is the server's iWARP port; raw TCP is on the next one.
const DefaultPort = 7175

// Serve is the server: an iWARP listener on addr and a raw TCP listener on
// the next port (any free port when addr's port is 0), serving each
// connection as its descriptor asks until ctx ends. ready is called once
// both listen, with their addresses; the error of a single connection
// goes to connErr and the server carries on.
func Serve(ctx context.Context, addr string, ready func(iwarpAddr, tcpAddr net.Addr), connErr func(error)) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	raiseFDLimit() // as many connections as the system lets this process have
	// The idle-QP target holds up to MaxIdleQPs connections, the other
	// tests up to MaxDepth QPs each.
	ln, err := iwarp.Listen("tcp", addr, &iwarp.ListenConfig{MaxPending: 1024, MaxConnections: MaxIdleQPs + 2*MaxDepth})
	if err != nil {
		return err
	}
	defer ln.Close()
	tcpAddr := net.JoinHostPort(host, "0")
	if p, _ := strconv.Atoi(port); p != 0 {
		tcpAddr = net.JoinHostPort(host, strconv.Itoa(p+1))
	}
	tln, err := net.Listen("tcp", tcpAddr)
	if err != nil {
		return err
	}
	defer tln.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready(ln.Addr(), tln.Addr())
	go func() {
		<-ctx.Done()
		tln.Close()
	}()
	go func() {
		for {
			c, err := tln.Accept()
			if err != nil {
				return
			}
			go serveRawTCP(c)
		}
	}()
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	idle := &idleConns{}
	defer idle.closeAll(true)
	for {
		req, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go func() {
			if err := serveConn(ctx, pd, req, idle); err != nil {
				connErr(err)
			}
		}()
	}
}

// serverConn is the server's end of one test connection.
type serverConn struct {
	d      desc
	qp     *iwarp.QP
	cq     *iwarp.CQ
	data   *iwarp.MR // the target of one-sided operations, the source of echoes
	recv   *iwarp.MR // receive slots, d.size each (Sends)
	report *iwarp.MR
	rwrs   []iwarp.RecvWR // one prepared receive per slot
	base   atomic.Uint64  // mallocs once the connection is warm (baseAfterWarmup)
}

// serveConn sets up what the descriptor asks, accepts and serves the
// connection until the client closes it; an idle QP goes to idle instead.
func serveConn(ctx context.Context, pd *iwarp.PD, req *iwarp.ConnRequest, idle *idleConns) error {
	d, err := decodeDesc(req.PrivateData())
	if err != nil {
		return req.Reject([]byte(err.Error()))
	}
	if d.op == opStat {
		// The answer is the rejection's private data: no QP needed.
		if d.flags&flagRelease != 0 {
			idle.closeAll(false)
		}
		r := reply{idle: uint64(idle.sweep()), sys: takeSnapshot(true), fds: fdsNow()}
		return req.Reject(r.encode())
	}
	s := &serverConn{d: d}
	held := false
	defer func() {
		if !held {
			s.close()
		}
	}()
	if err := s.setup(pd); err != nil {
		_ = req.Reject([]byte(err.Error()))
		return err
	}
	reply := reply{sys: takeSnapshot(false)}
	if s.data != nil {
		reply.remote = s.data.Remote()
	}
	opts := &iwarp.ConnOptions{DisableCRC: d.flags&flagCRC == 0, PrivateData: reply.encode()}
	if err := req.Accept(ctx, s.qp, opts); err != nil {
		return err
	}
	s.base.Store(mallocsNow())
	if d.op == opIdle {
		held = idle.add(s)
		return nil
	}
	go s.baseAfterWarmup()
	if err := s.serve(ctx); err != nil {
		return fmt.Errorf("%v (lat %v, %d B): %w", d.op, d.flags&flagLat != 0, d.size, err)
	}
	return nil
}

func (s *serverConn) setup(pd *iwarp.PD) error {
	d := &s.d
	if d.op == opIdle {
		return s.newQP(pd, &iwarp.QPConfig{})
	}
	recvs := int(d.recvs) + 1 // one more for "done"
	if err := s.newQP(pd, &iwarp.QPConfig{SendQueueDepth: 16, RecvQueueDepth: recvs, MaxSGE: 1, IRD: 128, ORD: 16}); err != nil {
		return err
	}
	var err error
	reg := func(n int, acc iwarp.Access) *iwarp.MR {
		if err != nil {
			return nil
		}
		var mr *iwarp.MR
		mr, err = pd.RegisterMemory(alignedBuf(max(n, 8)), acc)
		return mr
	}
	size := int(d.op.sizeOf(int(d.size)))
	s.data = reg(size*d.spread(), iwarp.AccessLocalWrite|iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead|iwarp.AccessRemoteAtomic)
	s.report = reg(reportLen, 0)
	if d.op == Send || d.op == SendImm {
		s.recv = reg(size*recvs, iwarp.AccessLocalWrite)
	}
	if err != nil {
		return err
	}
	s.rwrs = make([]iwarp.RecvWR, recvs)
	for i := range recvs {
		s.rwrs[i].ID = uint64(i)
		if s.recv != nil {
			s.rwrs[i].SGL = []iwarp.SGE{s.recv.SGE(i*size, size)}
		}
		if err := s.postRecv(uint64(i)); err != nil {
			return err
		}
	}
	return nil
}

func (s *serverConn) newQP(pd *iwarp.PD, cfg *iwarp.QPConfig) error {
	sq, rq := max(cfg.SendQueueDepth, 64), max(cfg.RecvQueueDepth, 64)
	if cfg.SendQueueDepth != 0 {
		sq, rq = cfg.SendQueueDepth, cfg.RecvQueueDepth
	}
	cq, err := pd.Device().NewCQ(sq+rq, nil)
	if err != nil {
		return err
	}
	s.cq = cq
	cfg.SendCQ, cfg.RecvCQ = cq, cq
	s.qp, err = pd.NewQP(cfg)
	return err
}

// warmFPDUs is how many FPDUs a connection receives before its
// allocations count: the client's warm-up sends more than that.
const warmFPDUs = 12

// baseAfterWarmup moves the allocation base to the moment the connection
// has received warmFPDUs FPDUs, so that what its first operations set
// up once (the receive goroutine's buffers, the first Read Response's
// arena) does not count per operation. The base is otherwise the end of
// the connection setup.
func (s *serverConn) baseAfterWarmup() {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.qp.Done():
			return
		case <-t.C:
		}
		if s.qp.Stats().FPDUsReceived >= warmFPDUs {
			s.base.Store(mallocsNow())
			return
		}
	}
}

// postRecv posts receive slot i. Receives are consumed in order, so every
// slot has a buffer ("done" is told apart by its length, 0); write-imm
// receives need none.
func (s *serverConn) postRecv(i uint64) error {
	return s.qp.PostRecv(s.rwrs[i])
}

// serve runs the receive loop: check sequence numbers and give credits
// back (bandwidth), or answer each message (latency), until "done".
func (s *serverConn) serve(ctx context.Context) error {
	d := &s.d
	lat := d.flags&flagLat != 0
	var comps [64]iwarp.Completion
	var rep report // receives since the connection started (warm-up included)
	credits := uint32(0)
	size := int(d.size)
	for {
		n := s.cq.Poll(comps[:])
		if n == 0 {
			if err := s.cq.Wait(ctx); err != nil {
				return err
			}
			continue
		}
		for i := range comps[:n] {
			c := &comps[i]
			if c.Status != iwarp.StatusSuccess {
				if s.qp.Err() != nil {
					return nil // the client closed the connection
				}
				return fmt.Errorf("%v: %v completion %v: %v", d.op, c.Op, c.Status, c.Err)
			}
			if c.Op != iwarp.OpRecv {
				continue // a credit or report Send was handed to TCP
			}
			if c.Len == 0 && !c.HasImmediate {
				rep.sys = takeSnapshot(false)
				rep.sys.base = s.base.Load()
				rep.encode(s.report.Bytes())
				err := s.qp.PostSend(iwarp.SendWR{ID: 1 << 62, Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: []iwarp.SGE{s.report.SGE(0, reportLen)}})
				if err != nil {
					return err
				}
				// The test is over: wait for the client to close.
				select {
				case <-s.qp.Done():
				case <-ctx.Done():
				}
				return nil
			}
			seq := c.Immediate
			if d.op == Send {
				seq = ^uint64(0)
				if size >= 8 {
					seq = leUint64(s.recv.Bytes()[int(c.ID)*size:])
				}
			}
			if seq != rep.recvs && seq != ^uint64(0) {
				rep.seqErr++
			}
			rep.recvs++
			if err := s.postRecv(c.ID); err != nil {
				return err
			}
			if lat {
				if err := s.echo(ctx, seq); err != nil {
					return err
				}
				if d.flags&flagAway != 0 && seq%2 == 1 {
					time.Sleep(respAway) // busy elsewhere: the peer's next operation must not wait for this
				}
				continue
			}
			if credits++; credits >= d.batch {
				if err := s.qp.PostSend(iwarp.SendWR{Op: iwarp.OpImmediate, Flags: iwarp.Signaled, Immediate: uint64(credits)}); err != nil {
					return err
				}
				credits = 0
			}
		}
	}
}

// echo answers one latency message with the same operation.
func (s *serverConn) echo(ctx context.Context, seq uint64) error {
	sge := s.data.SGE(0, int(s.d.size))
	switch s.d.op {
	case Send:
		return s.qp.Send(ctx, sge)
	case SendImm:
		return s.qp.SendWithImmediate(ctx, seq, sge)
	case WriteImm:
		return s.qp.WriteWithImmediate(ctx, s.d.remote, seq, sge)
	}
	return nil
}

func (s *serverConn) close() {
	if s.qp != nil {
		s.qp.Close()
	}
	for _, mr := range []*iwarp.MR{s.data, s.recv, s.report} {
		if mr != nil {
			_ = mr.Close()
		}
	}
	if s.cq != nil {
		s.cq.Close()
	}
}

// leUint64 reads a little-endian sequence number.
func leUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}
