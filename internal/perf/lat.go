package perf

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/bench"
)

// Latency tests use the default blocking API, one operation at a time on
// one QP, and time each round trip:
//   - send, send-imm, write-imm: ping-pong; the server answers each message
//     with the same operation, the client waits for its receive completion;
//   - write: a Write followed by an 8-byte Read, which completes only after
//     the Write was placed (docs/semantics.md rule 3);
//   - read, read-v2, fetchadd, cmpswap: the operation's own round trip.

// maxSamples bounds the samples kept per test (a test stops when full).
const maxSamples = 1 << 20

const latWarmup = 16

// latQP drives one QP of a latency test.
type latQP struct {
	c     *conn
	op    Op
	size  int
	sge   iwarp.SGE
	sink8 iwarp.SGE
	rwr   iwarp.RecvWR
	seq   uint64
}

func (ep *Endpoint) newLatQP(ctx context.Context, op Op, size int, crc bool) (*latQP, error) {
	size = op.sizeOf(size)
	d := desc{op: op, flags: flagLat, size: uint32(size), recvs: 2, batch: 1}
	if crc {
		d.flags |= flagCRC
	}
	c, err := ep.dial(ctx, d, max(size, 8), 4, 4)
	if err != nil {
		return nil, err
	}
	l := &latQP{c: c, op: op, size: size, sge: c.local.SGE(0, size), sink8: c.local.SGE(0, 8)}
	l.rwr = iwarp.RecvWR{ID: 7, SGL: []iwarp.SGE{l.sge}}
	if op == WriteImm {
		l.rwr.SGL = nil
	}
	return l, nil
}

// once runs one operation and waits for what completes it.
func (l *latQP) once(ctx context.Context) error {
	qp, seq := l.c.qp, l.seq
	l.seq++
	remote := l.c.remote
	var err error
	switch l.op {
	case Send, SendImm, WriteImm:
		if err = qp.PostRecv(l.rwr); err != nil {
			return err
		}
		switch l.op {
		case Send:
			if l.size >= 8 {
				binary.LittleEndian.PutUint64(l.c.local.Bytes(), seq)
			}
			err = qp.Send(ctx, l.sge)
		case SendImm:
			err = qp.SendWithImmediate(ctx, seq, l.sge)
		default:
			err = qp.WriteWithImmediate(ctx, remote, seq, l.sge)
		}
		if err != nil {
			return err
		}
		c, err := l.c.cq.Next(ctx)
		if err != nil {
			return err
		}
		if c.Status != iwarp.StatusSuccess || c.Op != iwarp.OpRecv {
			return fmt.Errorf("%v answer: %v completion %v: %v", l.op, c.Op, c.Status, c.Err)
		}
		return nil
	case Write:
		if err = qp.Write(ctx, remote, l.sge); err == nil {
			err = qp.Read(ctx, remote, l.sink8)
		}
	case Read:
		err = qp.Read(ctx, remote, l.sge)
	case ReadV2:
		err = qp.ReadV2(ctx, remote, l.sge)
	case FetchAdd:
		_, err = qp.FetchAdd(ctx, remote, 1)
	case CmpSwap:
		_, err = qp.CompareSwap(ctx, remote, seq, seq+1)
	}
	return err
}

// runLat runs one latency test on one QP and returns its statistics.
func (ep *Endpoint) runLat(ctx context.Context, op Op, size int, cfg *Config, prog *progress, samples []time.Duration) (Result, error) {
	res := Result{Op: op.String(), Mode: "lat", Transport: "iwarp", CRC: cfg.CRC, Size: op.sizeOf(size), QPs: 1, Depth: 1}
	l, err := ep.newLatQP(ctx, op, size, cfg.CRC)
	if err != nil {
		return res, err
	}
	defer l.c.close()
	err = timeLat(ctx, l.c, &res, prog, cfg, samples, nil, func() error { return l.once(ctx) })
	return res, err
}

// timeLat samples the round trips of once on c (sampleRoundTrips, with
// prelude before each), ends the test with the server's report and fills
// res with the statistics.
func timeLat(ctx context.Context, c *conn, res *Result, prog *progress, cfg *Config, samples []time.Duration, prelude, once func() error) error {
	// The counters start after the warm-up, as testing.AllocsPerRun's do:
	// what a QP allocates on its first operations (queues sized on first
	// use, a waiter, a timer) is its setup, not a cost per operation.
	var before sysSnapshot
	k, elapsed, err := sampleRoundTrips(fmt.Sprintf("%s lat %d B", res.Op, res.Size), prog, cfg, samples, prelude, once,
		func() { before = startSnapshot() })
	after := takeSnapshot(false)
	if err != nil {
		return err
	}
	if err := c.postCtrl(0); err != nil {
		return err
	}
	rep, err := c.finish(ctx)
	if err != nil {
		return err
	}
	res.Ops = uint64(k)
	res.ServerRecvs = rep.recvs
	if rep.seqErr != 0 {
		return fmt.Errorf("%s: %d messages out of sequence at the server", res.Op, rep.seqErr)
	}
	res.setRates(elapsed)
	res.setCPU(before, after, c.start, rep.sys)
	res.Lat = bench.Summarize(samples[:k])
	return nil
}

// sampleRoundTrips warms up with latWarmup calls of prelude (if any) and
// once, calls started (if not nil), then times calls of once until samples
// is full, cfg.Iters were taken or, without an iteration count,
// cfg.Duration has passed. Without a
// prelude the round trips are timed back to back — each sample is the time
// since the previous one ended; with one, prelude runs untimed before each
// call of once and the sample is that call alone. It shows the progress
// line meanwhile and returns how many samples it took and the time the
// whole loop took. The latency runs of both transports (ours and raw TCP)
// use it.
func sampleRoundTrips(label string, prog *progress, cfg *Config, samples []time.Duration, prelude, once func() error, started func()) (int, time.Duration, error) {
	for range latWarmup {
		if prelude != nil {
			if err := prelude(); err != nil {
				return 0, 0, err
			}
		}
		if err := once(); err != nil {
			return 0, 0, err
		}
	}
	n := len(samples)
	if cfg.Iters > 0 {
		n = min(n, cfg.Iters)
	}
	if started != nil {
		started()
	}
	var cnt atomic.Uint64
	stopProg := prog.track(label, time.Now(), cfg.Duration, func() (uint64, int) { return cnt.Load(), 0 })
	defer stopProg()
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	t0 := start
	k := 0
	for k < n {
		if prelude != nil {
			if err := prelude(); err != nil {
				return k, time.Since(start), err
			}
			t0 = time.Now()
		}
		if err := once(); err != nil {
			return k, time.Since(start), err
		}
		t1 := time.Now()
		samples[k] = t1.Sub(t0)
		k++
		cnt.Store(uint64(k))
		t0 = t1
		if cfg.Iters == 0 && !t1.Before(deadline) {
			break
		}
	}
	return k, time.Since(start), nil
}
