package perf

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp"
)

// Bandwidth and message-rate tests: each QP keeps up to depth work
// requests in flight with PostSend and Poll, posting them in batches whose
// last WR is signaled. Operations that consume a receive at the server
// (send, write-imm, send-imm) spend credits the server gives back with
// Immediate Data as it re-posts its receives, and carry a sequence number
// the server checks (the Immediate, or the payload's first 8 bytes).

// localMax bounds the payload memory of one QP on either side.
const localMax = 64 << 20

// bwQP drives one QP of a bandwidth test.
type bwQP struct {
	c       *conn
	op      Op
	size    int
	depth   int // WRs in flight at most
	pb      int // WRs per PostSend
	slots   int
	spread  bool // Writes and Reads cycle through slots on both sides (Config.Slots)
	credits int
	wrs     []iwarp.SendWR
	variant iwarp.SendFlags // the operation's variant flags (WithImmediate)
	sgls    [][]iwarp.SGE
	posted  uint64
	done    uint64        // completed
	doneA   atomic.Uint64 // done, for the progress line
	stopped bool
	last    time.Time // when the last completion was polled
	comps   [64]iwarp.Completion
}

// bwShape returns the server's receive count, its credit batch and the
// depth a test can use.
func bwShape(op Op, size, depth int) (recvs, batch, d int) {
	if !op.consumesRecv() {
		return 0, 1, depth
	}
	recvs = min(maxRecv-1, max(2*depth, 8))
	if op != WriteImm {
		recvs = max(2, min(recvs, localMax/max(size, 1)))
	}
	return recvs, max(1, recvs/4), max(1, min(depth, recvs/2))
}

// newBwQP connects one QP for a bandwidth test.
func (ep *Endpoint) newBwQP(ctx context.Context, op Op, size, depth, slots int, crc bool) (*bwQP, error) {
	size = op.sizeOf(size)
	recvs, batch, depth := bwShape(op, size, depth)
	b := &bwQP{op: op, size: size, depth: depth, pb: max(1, min(depth/4, 64)), slots: 1, credits: recvs}
	d := desc{op: op, size: uint32(size), recvs: uint32(recvs), batch: uint32(batch)}
	switch {
	case op == Send && size >= 8:
		b.slots = depth
	case (op == Write || op == Read) && slots > 1:
		b.slots, b.spread, d.slots = slots, true, uint16(slots)
	}
	if crc {
		d.flags |= flagCRC
	}
	c, err := ep.dial(ctx, d, b.slots*size, depth+b.pb, ctrlRecvs)
	if err != nil {
		return nil, err
	}
	b.c = c
	for i := range ctrlRecvs {
		if err := c.postCtrl(i); err != nil {
			c.close()
			return nil, err
		}
	}
	b.sgls = make([][]iwarp.SGE, b.slots)
	for i := range b.sgls {
		b.sgls[i] = []iwarp.SGE{c.local.SGE(i*size, size)}
	}
	b.wrs = make([]iwarp.SendWR, b.pb)
	for i := range b.wrs {
		w := &b.wrs[i]
		w.Remote = c.remote
		switch op {
		case Send:
			w.Op = iwarp.OpSend
		case SendImm:
			w.Op, b.variant = iwarp.OpSend, iwarp.WithImmediate
		case WriteImm:
			w.Op, b.variant = iwarp.OpWrite, iwarp.WithImmediate
		case Write:
			w.Op = iwarp.OpWrite
		case Read:
			w.Op = iwarp.OpRead
		case ReadV2:
			w.Op = iwarp.OpReadV2
		case FetchAdd:
			w.Op, w.Add = iwarp.OpFetchAdd, 1
		case CmpSwap:
			w.Op, w.CompareMask, w.SwapMask = iwarp.OpCompareSwap, ^uint64(0), ^uint64(0)
		}
	}
	return b, nil
}

// run posts until limit WRs were posted or the deadline passed, then
// waits for every completion.
func (b *bwQP) run(ctx context.Context, limit uint64, deadline time.Time) error {
	b.stopped = false
	for {
		for !b.stopped {
			if b.posted >= limit || !time.Now().Before(deadline) {
				b.stopped = true
				break
			}
			n := uint64(b.pb)
			n = min(n, limit-b.posted)
			if b.posted-b.done+n > uint64(b.depth) || (b.op.consumesRecv() && b.credits < int(n)) {
				break
			}
			if err := b.post(int(n)); err != nil {
				return err
			}
		}
		if b.stopped && b.done == b.posted {
			return nil
		}
		n := b.c.cq.Poll(b.comps[:])
		if n == 0 {
			if err := b.c.cq.Wait(ctx); err != nil {
				return err
			}
			continue
		}
		for i := range b.comps[:n] {
			comp := &b.comps[i]
			if comp.Status != iwarp.StatusSuccess {
				return fmt.Errorf("%v completion %v: %v", comp.Op, comp.Status, comp.Err)
			}
			if comp.Op == iwarp.OpRecv {
				j, ok := isCtrl(comp)
				if !ok || !comp.HasImmediate {
					return fmt.Errorf("unexpected receive %d bytes", comp.Len)
				}
				b.credits += int(comp.Immediate)
				if err := b.c.postCtrl(j); err != nil {
					return err
				}
				continue
			}
			b.done = comp.ID + 1
		}
		b.last = time.Now()
		b.doneA.Store(b.done)
	}
}

// post posts n WRs, the last one signaled.
func (b *bwQP) post(n int) error {
	for k := range n {
		seq := b.posted + uint64(k)
		w := &b.wrs[k]
		w.ID, w.Immediate, w.Flags = seq, seq, b.variant
		if k == n-1 {
			w.Flags |= iwarp.Signaled
		}
		if b.op.atomic() {
			w.Compare, w.Swap = seq, seq+1
		} else {
			slot := int(seq % uint64(b.slots))
			w.SGL = b.sgls[slot]
			if b.spread {
				w.Remote = b.c.remote
				w.Remote.TO += uint64(slot * b.size)
				w.Remote.Len = uint32(b.size)
			}
			if b.op == Send && b.size >= 8 {
				binary.LittleEndian.PutUint64(b.c.local.Bytes()[slot*b.size:], seq)
			}
		}
	}
	if err := b.c.qp.PostSend(b.wrs[:n]...); err != nil {
		return err
	}
	b.posted += uint64(n)
	if b.op.consumesRecv() {
		b.credits -= n
	}
	return nil
}

// runBW runs one bandwidth test: qps QPs at once, for cfg.Iters
// operations each or cfg.Duration.
func (ep *Endpoint) runBW(ctx context.Context, op Op, size int, cfg *Config, prog *progress) (Result, error) {
	res := Result{Op: op.String(), Mode: "bw", Transport: "iwarp", CRC: cfg.CRC, Size: op.sizeOf(size), QPs: cfg.QPs, Depth: cfg.Depth}
	qps := make([]*bwQP, cfg.QPs)
	defer func() {
		for _, b := range qps {
			if b != nil {
				b.c.close()
			}
		}
	}()
	for i := range qps {
		b, err := ep.newBwQP(ctx, op, size, cfg.Depth, cfg.Slots, cfg.CRC)
		if err != nil {
			return res, err
		}
		qps[i] = b
	}
	res.Depth = qps[0].depth
	// Warm up (pools, the first pages of every buffer), then start together.
	far := time.Now().Add(time.Hour)
	warm := uint64(4 * qps[0].depth)
	if err := forEachQP(qps, func(b *bwQP) error { return b.run(ctx, warm, far) }); err != nil {
		return res, err
	}
	limit, deadline := ^uint64(0), far
	if cfg.Iters > 0 {
		limit = warm + uint64(cfg.Iters)
	}
	before := startSnapshot()
	start := time.Now()
	if cfg.Iters == 0 {
		deadline = start.Add(cfg.Duration)
	}
	stopProg := prog.track(fmt.Sprintf("%s bw %d B", op, res.Size), start, cfg.Duration, func() (uint64, int) {
		var n uint64
		for _, b := range qps {
			n += b.doneA.Load()
		}
		return n - warm*uint64(len(qps)), res.Size
	})
	reports := make([]report, len(qps))
	ends := make([]time.Time, len(qps))
	err := forEachQPi(qps, func(i int, b *bwQP) error {
		if err := b.run(ctx, limit, deadline); err != nil {
			return err
		}
		ends[i] = b.last
		r, err := b.c.finish(ctx)
		if op != Read && op != ReadV2 && !op.atomic() {
			ends[i] = time.Now() // the report confirms the bytes at the sink
		}
		reports[i] = r
		return err
	})
	stopProg()
	after := takeSnapshot(false)
	res.MULPDU = qps[0].c.qp.Attributes().MULPDU // it follows the MSS: as it ended
	if err != nil {
		return res, err
	}
	end := start
	var serverStart, serverEnd sysSnapshot
	var srvBase uint64
	for i, b := range qps {
		if ends[i].After(end) {
			end = ends[i]
		}
		res.Ops += b.done - warm
		res.ServerRecvs += reports[i].recvs
		res.SeqErrors += reports[i].seqErr
		if i == 0 || b.c.start.cpuNS < serverStart.cpuNS {
			serverStart = b.c.start
		}
		if reports[i].sys.cpuNS > serverEnd.cpuNS {
			serverEnd = reports[i].sys
		}
		srvBase = max(srvBase, reports[i].sys.base) // the last connection set up
	}
	if op.consumesRecv() && res.ServerRecvs != res.Ops+warm*uint64(len(qps)) {
		return res, fmt.Errorf("%v: the server received %d messages, %d were sent", op, res.ServerRecvs, res.Ops+warm*uint64(len(qps)))
	}
	if res.SeqErrors != 0 {
		return res, fmt.Errorf("%v: %d messages out of sequence at the server", op, res.SeqErrors)
	}
	serverEnd.base = srvBase
	res.setRates(end.Sub(start))
	res.setCPU(before, after, serverStart, serverEnd)
	// The server's counters start at its accept: they cover the warm-up too.
	res.setPerGB(res.Ops + warm*uint64(len(qps)))
	return res, nil
}

// forEachQP runs f on every QP in its own goroutine and returns the first
// error.
func forEachQP(qps []*bwQP, f func(*bwQP) error) error {
	return forEachQPi(qps, func(_ int, b *bwQP) error { return f(b) })
}

func forEachQPi(qps []*bwQP, f func(int, *bwQP) error) error {
	if len(qps) == 1 {
		return f(0, qps[0])
	}
	var wg sync.WaitGroup
	errs := make([]error, len(qps))
	for i, b := range qps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, b)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
