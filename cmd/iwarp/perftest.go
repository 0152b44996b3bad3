package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/goiwarp/iwarp"
)

// "iwarp perf -perftest" speaks perftest's own protocol (ib_write_bw,
// ib_send_bw, ib_read_bw, ib_write_lat, ib_send_lat, ib_read_lat of
// perftest 4.5 run with -R, rdma_cm): as the server for a perftest client
// and as the client of a perftest server, so that our stack can be
// measured against any perftest peer. Each test uses two connections to
// the same port: the first carries perftest's lock-step exchange of
// parameters, QP records and results (perftest_comm.go,
// perftest_msg.go), the second the test's data (perftest_data.go).

// ptConfig is one perftest-compatible test.
type ptConfig struct {
	op      perfOp // perfWrite, perfSend or perfRead
	lat     bool   // a latency test (ib_*_lat), else bandwidth (ib_*_bw)
	size    int
	iters   int
	txDepth int // bandwidth tests: work requests in flight
	noCRC   bool
	timeout time.Duration // bound of the whole test
	// dial, if set, makes the client's connections (tests capture them).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ptLingerServer and ptLingerClient bound how long a side that has
// finished waits for the peer to close the data connection first (the
// client less: when both sides are ours, it closes first).
const (
	ptLingerServer = 2 * time.Second
	ptLingerClient = 300 * time.Millisecond
)

// name is perftest's program name for the test.
func (c *ptConfig) name() string {
	m := "bw"
	if c.lat {
		m = "lat"
	}
	return fmt.Sprintf("ib_%v_%s", c.op, m)
}

// The shape of the exchange on the first connection after the four
// parameter messages and the two all-zero records that bracket the data
// connection's setup (as recorded from perftest 4.5 on two siw peers):
// how many QP records precede the test, whether one follows it, and
// whether the client then reports its bandwidth (followed by one more
// record).
func (c *ptConfig) recordsBefore() int {
	if !c.lat && c.op != perfSend {
		return 3
	}
	return 4
}

func (c *ptConfig) recordAfter() bool { return !(c.lat && c.op == perfWrite) }

func (c *ptConfig) reports() bool { return !c.lat && c.op != perfSend }

// ptCycleBuffer and ptCacheLine are what we announce in check_sys_data
// (perftest's defaults: the page size and 64); each side uses the larger
// of its own and the peer's.
const (
	ptCycleBuffer = 4096
	ptCacheLine   = 64
	ptMTUEnum     = 3 // IBV_MTU_1024, what siw reports
)

// ptSession is one side of one test.
type ptSession struct {
	cfg    *ptConfig
	client bool
	out    io.Writer
	dev    *iwarp.Device
	pd     *iwarp.PD
	comm   *ptComm
	data   *ptData
	cycle  int // agreed cycle buffer
	cache  int // agreed cache line size
	peerV  string
	rem    ptRecord // the peer's data QP record
	drain  ptDrainer
}

func newPTSession(cfg *ptConfig, client bool, out io.Writer) (*ptSession, error) {
	s := &ptSession{cfg: cfg, client: client, out: out, dev: iwarp.NewDevice(nil)}
	var err error
	if s.pd, err = s.dev.AllocPD(); err != nil {
		return nil, err
	}
	if s.comm, err = newPTComm(s.pd, client); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *ptSession) close() {
	if s.data != nil {
		s.data.close()
	}
	if s.comm != nil {
		s.comm.close()
	}
}

func (s *ptSession) connOpts() *iwarp.ConnOptions {
	return &iwarp.ConnOptions{NoCRC: s.cfg.noCRC, Dialer: s.drain.dial(s.cfg.dial)}
}

// params runs the parameter messages: version, cycle buffer, cache line
// size, MTU.
func (s *ptSession) params(ctx context.Context) error {
	got, err := s.comm.xchg(ctx, "version", ptVersion(), ptVersionLen)
	if err != nil {
		return err
	}
	v, num, err := ptParseVersion(got)
	if err != nil {
		return err
	}
	if num < perftestMinVersion {
		return fmt.Errorf("peer perftest version %q: versions before %v exchange differently and are not supported", v, perftestMinVersion)
	}
	s.peerV = v
	if got, err = s.comm.xchg(ctx, "cycle buffer", ptWord(ptCycleBuffer), ptWordLen); err != nil {
		return err
	}
	s.cycle = max(ptCycleBuffer, int(beUint32(got)))
	if got, err = s.comm.xchg(ctx, "cache line size", ptWord(ptCacheLine), ptWordLen); err != nil {
		return err
	}
	s.cache = max(ptCacheLine, int(beUint32(got)))
	if s.cycle > 1<<30 || s.cache > 1<<16 || s.cache <= 0 {
		return fmt.Errorf("peer's cycle buffer %d or cache line size %d out of range", s.cycle, s.cache)
	}
	_, err = s.comm.xchg(ctx, "MTU", ptMTU(ptMTUEnum), ptMTULen)
	return err
}

func beUint32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// records runs n record exchanges and keeps the peer's last record.
func (s *ptSession) records(ctx context.Context, what string, n int) error {
	mine := s.data.record().encode()
	for i := 0; i < n; i++ {
		got, err := s.comm.xchg(ctx, what, mine, ptRecordLen)
		if err != nil {
			return err
		}
		if s.rem, err = ptParseRecord(got); err != nil {
			return err
		}
	}
	return nil
}

// zero exchanges one all-zero record (perftest's synchronisation around
// the data connection's setup).
func (s *ptSession) zero(ctx context.Context) error {
	_, err := s.comm.xchg(ctx, "synchronisation", make([]byte, ptRecordLen), ptRecordLen)
	return err
}

// ptClient runs one test against the perftest server at addr.
func ptClient(ctx context.Context, cfg *ptConfig, addr string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	s, err := newPTSession(cfg, true, out)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.comm.qp.Connect(ctx, "tcp", addr, s.connOpts()); err != nil {
		return fmt.Errorf("connect (first connection): %w", err)
	}
	if err := s.params(ctx); err != nil {
		return err
	}
	if err := s.zero(ctx); err != nil {
		return err
	}
	if err := s.connectData(ctx, addr); err != nil {
		return err
	}
	if err := s.zero(ctx); err != nil {
		return err
	}
	if err := s.records(ctx, "QP records", cfg.recordsBefore()); err != nil {
		return err
	}
	s.printHeader()
	res, err := s.data.run(ctx, s.rem)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.name(), err)
	}
	s.drain.wait(ctx, time.Minute)
	if cfg.recordAfter() {
		if err := s.records(ctx, "end of test", 1); err != nil {
			return err
		}
	}
	if cfg.reports() {
		for _, w := range res.report.words() {
			if _, err := s.comm.xchg(ctx, "report", w, ptReportLen); err != nil {
				return err
			}
		}
		if err := s.records(ctx, "close", 1); err != nil {
			return err
		}
	}
	s.finish(ctx, res)
	return nil
}

// finish prints the result and closes both connections, the data
// connection first.
func (s *ptSession) finish(ctx context.Context, res *ptResult) {
	s.printResult(res)
	s.linger(ctx)
	s.data.qp.Disconnect(ctx)
	s.comm.qp.Disconnect(ctx)
}

// linger lets the peer close the data connection first, for up to
// a limit: a perftest peer may still be completing its last work
// request when our FIN arrives, and siw then reports it in error (its
// ib_write_lat and ib_read_lat exit 1). perftest 4.5's client closes the
// data connection first, newer ones wait for the server.
func (s *ptSession) linger(ctx context.Context) {
	limit := ptLingerServer
	if s.client {
		limit = ptLingerClient
	}
	select {
	case <-s.data.qp.Done():
	case <-time.After(limit):
	case <-ctx.Done():
	}
}

// connectData makes the data connection. A perftest server starts
// listening for it only once it has answered the first synchronisation,
// and through a port forward (QEMU's) a connection can be accepted and
// closed before anyone listens: like perftest's client, try again, up to
// ten times 100 ms apart, with a fresh QP each time.
func (s *ptSession) connectData(ctx context.Context, addr string) error {
	var err error
	for try := 0; try < 10; try++ {
		if s.data != nil {
			s.data.close()
			s.data = nil
			time.Sleep(100 * time.Millisecond)
		}
		if s.data, err = newPTData(s.pd, s.cfg, true, s.cycle, s.cache); err != nil {
			return err
		}
		if err = s.data.qp.Connect(ctx, "tcp", addr, s.connOpts()); err == nil {
			return nil
		}
		var rej *iwarp.RejectedError
		if ctx.Err() != nil || errors.As(err, &rej) {
			break
		}
	}
	return fmt.Errorf("connect (data connection): %w", err)
}

// ptServe waits for one perftest client on ln and runs its test.
func ptServe(ctx context.Context, cfg *ptConfig, ln *iwarp.Listener, out io.Writer) error {
	s, err := newPTSession(cfg, false, out)
	if err != nil {
		return err
	}
	defer s.close()
	req, err := ln.Accept(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if err := req.Accept(ctx, s.comm.qp, s.connOpts()); err != nil {
		return fmt.Errorf("accept (first connection from %v): %w", req.RemoteAddr(), err)
	}
	if err := s.params(ctx); err != nil {
		return err
	}
	if s.data, err = newPTData(s.pd, cfg, false, s.cycle, s.cache); err != nil {
		return err
	}
	if err := s.zero(ctx); err != nil {
		return err
	}
	dreq, err := ln.Accept(ctx)
	if err != nil {
		return fmt.Errorf("waiting for the data connection: %w", err)
	}
	dopts := s.connOpts()
	// ib_write_lat's server writes first, before the client has sent
	// anything on this connection (they synchronise on the other one):
	// without peer-to-peer mode (siw's perftest offers none) that needs
	// the Responder's hold rule waived.
	dopts.ResponderSendsFirst = cfg.lat && cfg.op == perfWrite
	if err := dreq.Accept(ctx, s.data.qp, dopts); err != nil {
		return fmt.Errorf("accept (data connection from %v): %w", dreq.RemoteAddr(), err)
	}
	if err := s.zero(ctx); err != nil {
		return err
	}
	if err := s.records(ctx, "QP records", cfg.recordsBefore()); err != nil {
		return err
	}
	s.printHeader()
	res, err := s.data.serve(ctx, s.rem, func(ctx context.Context) error {
		if !cfg.recordAfter() {
			return nil
		}
		return s.records(ctx, "end of test", 1)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.name(), err)
	}
	if cfg.reports() {
		var words [][]byte
		for _, w := range (&ptReport{}).words() {
			got, err := s.comm.xchg(ctx, "report", w, ptReportLen)
			if err != nil {
				return err
			}
			words = append(words, got)
		}
		rep, err := ptParseReport(words)
		if err != nil {
			return err
		}
		if int(rep.Size) != cfg.size || int(rep.Iters) != cfg.iters {
			return fmt.Errorf("the client reports %d iterations of %d bytes, this server ran %d of %d (run both with the same -size and -n)", rep.Iters, rep.Size, cfg.iters, cfg.size)
		}
		res.report = rep
		if err := s.records(ctx, "close", 1); err != nil {
			return err
		}
	}
	if err := s.data.verify(ctx, res); err != nil {
		return fmt.Errorf("%s: %w", cfg.name(), err)
	}
	s.finish(ctx, res)
	return nil
}

// ptRandPSN is a random 24-bit packet sequence number for the records
// (perftest prints it; iWARP has no PSN).
func ptRandPSN() uint32 { return rand.Uint32() & 0xFFFFFF }

// ptHostPort adds perftest's default port 18515 to an address without one.
func ptHostPort(a string) string {
	if _, _, err := net.SplitHostPort(a); err == nil {
		return a
	}
	return net.JoinHostPort(a, "18515")
}
