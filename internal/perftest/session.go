package perftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/goiwarp/iwarp"
)

// lingerServer and lingerClient bound how long a side that has
// finished waits for the peer to close the data connection first (the
// client less: when both sides are ours, it closes first).
const (
	lingerServer = 2 * time.Second
	lingerClient = 300 * time.Millisecond
)

// cycleBuffer and cacheLine are what we announce in check_sys_data
// (perftest's defaults: the page size and 64); each side uses the larger
// of its own and the peer's.
const (
	cycleBuffer = 4096
	cacheLine   = 64
	mtuEnum     = 3 // IBV_MTU_1024, what siw reports
)

// session is one side of one test.
type session struct {
	cfg    *Config
	client bool
	out    io.Writer
	dev    *iwarp.Device
	pd     *iwarp.PD
	comm   *comm
	data   *dataQP
	cycle  int // agreed cycle buffer
	cache  int // agreed cache line size
	peerV  string
	rem    record // the peer's data QP record
	drain  drainer
}

func newSession(cfg *Config, client bool, out io.Writer) (*session, error) {
	s := &session{cfg: cfg, client: client, out: out, dev: iwarp.NewDevice(nil)}
	var err error
	if s.pd, err = s.dev.AllocPD(); err != nil {
		return nil, err
	}
	if s.comm, err = newComm(s.pd, client); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *session) close() {
	if s.data != nil {
		s.data.close()
	}
	if s.comm != nil {
		s.comm.close()
	}
}

func (s *session) connOpts() *iwarp.ConnOptions {
	return &iwarp.ConnOptions{DisableCRC: s.cfg.NoCRC, Dialer: s.drain.dial(s.cfg.Dial)}
}

// params runs the parameter messages: version, cycle buffer, cache line
// size, MTU.
func (s *session) params(ctx context.Context) error {
	got, err := s.comm.xchg(ctx, "version", versionMsg(), versionLen)
	if err != nil {
		return err
	}
	v, num, err := parseVersion(got)
	if err != nil {
		return err
	}
	if num < minVersion {
		return fmt.Errorf("peer perftest version %q: versions before %v exchange differently and are not supported", v, minVersion)
	}
	s.peerV = v
	if got, err = s.comm.xchg(ctx, "cycle buffer", word(cycleBuffer), wordLen); err != nil {
		return err
	}
	s.cycle = max(cycleBuffer, int(beUint32(got)))
	if got, err = s.comm.xchg(ctx, "cache line size", word(cacheLine), wordLen); err != nil {
		return err
	}
	s.cache = max(cacheLine, int(beUint32(got)))
	if s.cycle > 1<<30 || s.cache > 1<<16 || s.cache <= 0 {
		return fmt.Errorf("peer's cycle buffer %d or cache line size %d out of range", s.cycle, s.cache)
	}
	_, err = s.comm.xchg(ctx, "MTU", mtuMsg(mtuEnum), mtuLen)
	return err
}

func beUint32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// records runs n record exchanges and keeps the peer's last record.
func (s *session) records(ctx context.Context, what string, n int) error {
	mine := s.data.ownRecord().encode()
	for i := 0; i < n; i++ {
		got, err := s.comm.xchg(ctx, what, mine, recordLen)
		if err != nil {
			return err
		}
		if s.rem, err = parseRecord(got); err != nil {
			return err
		}
	}
	return nil
}

// zero exchanges one all-zero record (perftest's synchronisation around
// the data connection's setup).
func (s *session) zero(ctx context.Context) error {
	_, err := s.comm.xchg(ctx, "synchronisation", make([]byte, recordLen), recordLen)
	return err
}

// Client runs one test against the perftest server at addr (HOST:PORT),
// printing perftest's banner and result table to out. cfg's zero fields
// take perftest's defaults (SetDefaults).
func Client(ctx context.Context, cfg *Config, addr string, out io.Writer) error {
	cfg = withDefaults(cfg)
	if err := cfg.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	s, err := newSession(cfg, true, out)
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
		return fmt.Errorf("%s: %w", cfg.Name(), err)
	}
	s.drain.wait(ctx, time.Minute)
	if cfg.recordAfter() {
		if err := s.records(ctx, "end of test", 1); err != nil {
			return err
		}
	}
	if cfg.reports() {
		for _, w := range res.report.words() {
			if _, err := s.comm.xchg(ctx, "report", w, reportWordLen); err != nil {
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
func (s *session) finish(ctx context.Context, res *result) {
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
func (s *session) linger(ctx context.Context) {
	limit := lingerServer
	if s.client {
		limit = lingerClient
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
func (s *session) connectData(ctx context.Context, addr string) error {
	var err error
	for try := 0; try < 10; try++ {
		if s.data != nil {
			s.data.close()
			s.data = nil
			time.Sleep(100 * time.Millisecond)
		}
		if s.data, err = newDataQP(s.pd, s.cfg, true, s.cycle, s.cache); err != nil {
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

// Serve waits for one perftest client on ln and runs its test, printing
// perftest's banner and result table to out; as perftest's server, it
// then checks what the client did (the bytes of its Writes, the number of
// its Reads, the report it sent). cfg's zero fields take perftest's
// defaults (SetDefaults).
func Serve(ctx context.Context, cfg *Config, ln *iwarp.Listener, out io.Writer) error {
	cfg = withDefaults(cfg)
	if err := cfg.check(); err != nil {
		return err
	}
	s, err := newSession(cfg, false, out)
	if err != nil {
		return err
	}
	defer s.close()
	req, err := ln.Accept(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := req.Accept(ctx, s.comm.qp, s.connOpts()); err != nil {
		return fmt.Errorf("accept (first connection from %v): %w", req.RemoteAddr(), err)
	}
	if err := s.params(ctx); err != nil {
		return err
	}
	if s.data, err = newDataQP(s.pd, cfg, false, s.cycle, s.cache); err != nil {
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
	dopts.Interop = &iwarp.InteropOptions{ResponderSendsFirst: cfg.Lat && cfg.Op == Write}
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
		return fmt.Errorf("%s: %w", cfg.Name(), err)
	}
	if cfg.reports() {
		var words [][]byte
		for _, w := range (&bwReport{}).words() {
			got, err := s.comm.xchg(ctx, "report", w, reportWordLen)
			if err != nil {
				return err
			}
			words = append(words, got)
		}
		rep, err := parseReport(words)
		if err != nil {
			return err
		}
		if int(rep.Size) != cfg.Size || int(rep.Iters) != cfg.Iters {
			return fmt.Errorf("the client reports %d iterations of %d bytes, this server ran %d of %d (run both with the same -size and -n)", rep.Iters, rep.Size, cfg.Iters, cfg.Size)
		}
		res.report = rep
		if err := s.records(ctx, "close", 1); err != nil {
			return err
		}
	}
	if err := s.data.verify(ctx, res); err != nil {
		return fmt.Errorf("%s: %w", cfg.Name(), err)
	}
	s.finish(ctx, res)
	return nil
}

// randPSN is a random 24-bit packet sequence number for the records
// (perftest prints it; iWARP has no PSN).
func randPSN() uint32 { return rand.Uint32() & 0xFFFFFF }
