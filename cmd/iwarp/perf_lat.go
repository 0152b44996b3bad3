package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp"
)

// Latency tests use the default blocking API, one operation at a time on
// one QP, and time each round trip:
//   - send, send-imm, write-imm: ping-pong; the server answers each message
//     with the same operation, the client waits for its receive completion;
//   - write: a Write followed by an 8-byte Read, which completes only after
//     the Write was placed (docs/semantics.md rule 3);
//   - read, read-v2, fetchadd, cmpswap: the operation's own round trip.

// perfMaxSamples bounds the samples kept per test (a test stops when full).
const perfMaxSamples = 1 << 20

const perfLatWarmup = 16

// latQP drives one QP of a latency test.
type latQP struct {
	c     *perfConn
	op    perfOp
	size  int
	sge   iwarp.SGE
	sink8 iwarp.SGE
	rwr   iwarp.RecvWR
	seq   uint64
}

func (ep *perfEndpoint) newLatQP(ctx context.Context, op perfOp, size int, crc bool) (*latQP, error) {
	size = op.sizeOf(size)
	d := perfDesc{op: op, flags: perfFlagLat, size: uint32(size), recvs: 2, batch: 1}
	if crc {
		d.flags |= perfFlagCRC
	}
	c, err := ep.dial(ctx, d, max(size, 8), 4, 4)
	if err != nil {
		return nil, err
	}
	l := &latQP{c: c, op: op, size: size, sge: c.local.SGE(0, size), sink8: c.local.SGE(0, 8)}
	l.rwr = iwarp.RecvWR{ID: 7, SGL: []iwarp.SGE{l.sge}}
	if op == perfWriteImm {
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
	case perfSend, perfSendImm, perfWriteImm:
		if err = qp.PostRecv(l.rwr); err != nil {
			return err
		}
		switch l.op {
		case perfSend:
			if l.size >= 8 {
				binary.LittleEndian.PutUint64(l.c.local.Bytes(), seq)
			}
			err = qp.Send(ctx, l.sge)
		case perfSendImm:
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
	case perfWrite:
		if err = qp.Write(ctx, remote, l.sge); err == nil {
			err = qp.Read(ctx, l.sink8, remote)
		}
	case perfRead:
		err = qp.Read(ctx, l.sge, remote)
	case perfReadV2:
		err = qp.ReadV2(ctx, remote, l.sge)
	case perfFetchAdd:
		_, err = qp.FetchAdd(ctx, remote, 1)
	case perfCmpSwap:
		_, err = qp.CompareSwap(ctx, remote, seq, seq+1)
	}
	return err
}

// runLat runs one latency test on one QP and returns its statistics.
func (ep *perfEndpoint) runLat(ctx context.Context, op perfOp, size int, cfg *perfConfig, prog *progress, samples []time.Duration) (perfResult, error) {
	res := perfResult{Op: op.String(), Mode: "lat", Transport: "iwarp", CRC: cfg.crc, Size: op.sizeOf(size), QPs: 1, Depth: 1}
	l, err := ep.newLatQP(ctx, op, size, cfg.crc)
	if err != nil {
		return res, err
	}
	defer l.c.close()
	before := takeSnapshot(false)
	k, elapsed, err := sampleRoundTrips(fmt.Sprintf("%s lat %d B", op, res.Size), prog, cfg, samples, func() error { return l.once(ctx) })
	after := takeSnapshot(false)
	if err != nil {
		return res, err
	}
	if err := l.c.postCtrl(0); err != nil {
		return res, err
	}
	rep, err := l.c.finish(ctx)
	if err != nil {
		return res, err
	}
	res.Ops = uint64(k)
	res.ServerRecvs = rep.recvs
	if rep.seqErr != 0 {
		return res, fmt.Errorf("%v: %d messages out of sequence at the server", op, rep.seqErr)
	}
	res.setRates(elapsed)
	res.setCPU(before, after, l.c.start, rep.sys)
	res.Lat = latencyStats(samples[:k])
	return res, nil
}

// sampleRoundTrips warms up with perfLatWarmup calls of once, then times
// round trips back to back — each sample is the time since the previous one
// ended — until samples is full, cfg.iters were taken or, without an
// iteration count, cfg.duration has passed. It shows the progress line
// meanwhile and returns how many samples it took and the time they took.
// The latency runs of both transports (ours and raw TCP) use it.
func sampleRoundTrips(label string, prog *progress, cfg *perfConfig, samples []time.Duration, once func() error) (int, time.Duration, error) {
	for range perfLatWarmup {
		if err := once(); err != nil {
			return 0, 0, err
		}
	}
	n := len(samples)
	if cfg.iters > 0 {
		n = min(n, cfg.iters)
	}
	var cnt atomic.Uint64
	stopProg := prog.track(label, time.Now(), cfg.duration, func() (uint64, int) { return cnt.Load(), 0 })
	defer stopProg()
	start := time.Now()
	deadline := start.Add(cfg.duration)
	t0 := start
	k := 0
	for k < n {
		if err := once(); err != nil {
			return k, time.Since(start), err
		}
		t1 := time.Now()
		samples[k] = t1.Sub(t0)
		k++
		cnt.Store(uint64(k))
		t0 = t1
		if cfg.iters == 0 && !t1.Before(deadline) {
			break
		}
	}
	return k, time.Since(start), nil
}
