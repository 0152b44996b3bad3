package perf

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/goiwarp/iwarp"
)

// The responder-side latency test (target resp-lat): an 8-byte Read or a
// FetchAdd issued right after the responder's application returned from a
// CQ wait, the commonest RDMA pattern (a server waits for a request, the
// client then reads or changes its memory).
//
// The server is the Send latency test's (server.go): it blocks in
// CQ.Wait for a receive, re-posts it and answers with a Send (QP.Send).
// Then it goes straight back to blocking in CQ.Wait — or, after every
// second answer, only after respAway, as an application busy with the
// request it just got would. Each round the client sends an 8-byte Send,
// waits for the answer with CQ.Next and then, timed alone, reads 8 bytes
// of the server's memory with QP.Read or adds to them with QP.FetchAdd.
// So the operation reaches a responder whose application is blocked on
// its CQ again in half the rounds, and one that has returned from its CQ
// wait and is not back yet in the other half. A responder must serve it at
// once in both: neither an application blocked on its CQ nor one away from
// it may delay what the peer sends (docs/performance.md).

// respAway is how long the resp-lat server stays away from its CQ after
// every second answer: far longer than the client takes to issue its
// operation, so that the operation arrives meanwhile.
const respAway = 500 * time.Microsecond

// runRespLat runs one responder-side latency test of op (Read or
// FetchAdd) and returns the statistics of op's round trips.
func (ep *Endpoint) runRespLat(ctx context.Context, op Op, cfg *Config, prog *progress, samples []time.Duration) (Result, error) {
	res := Result{Op: op.String() + "-after-cq-wait", Mode: "lat", Transport: "iwarp", CRC: cfg.CRC, Size: 8, QPs: 1, Depth: 1}
	d := desc{op: Send, flags: flagLat | flagAway, size: 8, recvs: 2, batch: 1}
	if cfg.CRC {
		d.flags |= flagCRC
	}
	// Local memory: the request [0, 8), the answer [8, 16), the Read's
	// sink [16, 24).
	c, err := ep.dial(ctx, d, 24, 4, 4)
	if err != nil {
		return res, err
	}
	defer c.close()
	request, sink := c.local.SGE(0, 8), c.local.SGE(16, 8)
	answer := iwarp.RecvWR{ID: 7, SGL: []iwarp.SGE{c.local.SGE(8, 8)}}
	var seq uint64 // the server checks that every Send carries the next one
	prelude := func() error {
		if err := c.qp.PostRecv(answer); err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(c.local.Bytes(), seq)
		seq++
		if err := c.qp.Send(ctx, request); err != nil {
			return err
		}
		comp, err := c.cq.Next(ctx)
		if err != nil {
			return err
		}
		if comp.Status != iwarp.StatusSuccess || comp.Op != iwarp.OpRecv {
			return fmt.Errorf("the responder's answer: %v completion %v: %v", comp.Op, comp.Status, comp.Err)
		}
		return nil
	}
	var once func() error
	switch op {
	case Read:
		once = func() error { return c.qp.Read(ctx, c.remote, sink) }
	case FetchAdd:
		once = func() error {
			_, err := c.qp.FetchAdd(ctx, c.remote, 1)
			return err
		}
	default:
		return res, fmt.Errorf("no responder-side latency test of %v", op)
	}
	err = timeLat(ctx, c, &res, prog, cfg, samples, prelude, once)
	return res, err
}
