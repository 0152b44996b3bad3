package iwarp_test

import (
	"context"
	"fmt"

	"github.com/goiwarp/iwarp"
)

// The initiator side of the load test: one QP per pair, driven by its own
// goroutine through the blocking calls, one iteration at a time.

// Offsets in a client QP's local region.
const (
	localSend    = 0                           // Send payload
	localSendImm = localSend + loadMsgMax      // Send with Immediate payload
	localWrite   = localSendImm + loadMsgMax   // Write source
	localWImm    = localWrite + loadWriteMax   // Write with Immediate source
	localSink    = localWImm + loadWriteMax    // Read sink
	localSinkV2  = localSink + loadWriteMax    // Read V2 sink
	localAck     = localSinkV2 + loadReadV2Max // the acknowledgement's receive (8 bytes)
	localSize    = localAck + 8
)

// loadCASEvery: every loadCASEvery-th iteration also increments one of the
// loadCASWords CompareSwap counters (pair i uses counter i%loadCASWords:
// a few dozen QPs contend for each; with all of them on one word nearly
// every attempt fails and the load becomes a CompareSwap livelock).
const (
	loadCASEvery = 4
	loadCASWords = 32
)

// loadPair is one connection of the load test: the client QP and the
// server QP it is connected to.
type loadPair struct {
	idx    int
	qp     *iwarp.QP
	cq     *iwarp.CQ
	local  *iwarp.MR
	lbuf   *guarded
	server *loadServerQP
	static []byte // the server's static region, as the Read V2 must see it
	// Results, owned by the pair's goroutine until it returns.
	iterations int
	fetched    []uint64 // the values FetchAdd returned
	casDone    int      // successful CompareSwap increments
	casTries   int
	casGuess   uint64
}

// newLoadPair creates the client QP of pair idx on pd, its receive for the
// first acknowledgement posted.
func newLoadPair(pd *iwarp.PD, idx int, server *loadServerQP) (*loadPair, error) {
	p := &loadPair{idx: idx, server: server, lbuf: newGuarded(localSize, loadGuard), static: make([]byte, loadStatic)}
	fillPattern(p.static, idx, 0, kindStatic)
	var err error
	if p.cq, err = pd.Device().NewCQ(8, nil); err != nil {
		return nil, err
	}
	if p.qp, err = pd.NewQP(&iwarp.QPConfig{SendCQ: p.cq, RecvCQ: p.cq, SendQueueDepth: 4, RecvQueueDepth: 2}); err != nil {
		return nil, err
	}
	if p.local, err = pd.RegisterMemory(p.lbuf.bytes(), iwarp.AccessLocalWrite); err != nil {
		return nil, err
	}
	return p, p.postAck()
}

func (p *loadPair) postAck() error {
	return p.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{p.local.SGE(localAck, 8)}})
}

// iteration runs one round of every operation, verifying each result.
func (p *loadPair) iteration(ctx context.Context, seq int, words iwarp.RemoteBuffer) error {
	i, buf, srv := p.idx, p.lbuf.bytes(), p.server.slot.Remote()
	sub := func(off, n int) iwarp.RemoteBuffer {
		r, err := srv.Slice(uint32(off), uint32(n))
		if err != nil {
			panic(err)
		}
		return r
	}
	// Send: checked by the server's poller.
	n := patternSize(i, seq, kindSend, loadMsgMax)
	fillPattern(buf[localSend:][:n], i, seq, kindSend)
	if err := p.qp.Send(ctx, p.local.SGE(localSend, n)); err != nil {
		return fmt.Errorf("Send: %w", err)
	}
	// Write, read back below.
	nw := patternSize(i, seq, kindWrite, loadWriteMax)
	fillPattern(buf[localWrite:][:nw], i, seq, kindWrite)
	if err := p.qp.Write(ctx, sub(slotWrite, nw), p.local.SGE(localWrite, nw)); err != nil {
		return fmt.Errorf("Write: %w", err)
	}
	// Write with Immediate: the server checks the bytes on the completion.
	n = patternSize(i, seq, kindWImm, loadWriteMax)
	fillPattern(buf[localWImm:][:n], i, seq, kindWImm)
	if err := p.qp.WriteWithImmediate(ctx, sub(slotWriteImm, n), loadImm(i, seq, kindWImm), p.local.SGE(localWImm, n)); err != nil {
		return fmt.Errorf("Write with Immediate: %w", err)
	}
	// Send with Immediate (V2).
	n = patternSize(i, seq, kindSendImm, loadMsgMax)
	fillPattern(buf[localSendImm:][:n], i, seq, kindSendImm)
	if err := p.qp.SendWithImmediate(ctx, loadImm(i, seq, kindSendImm), p.local.SGE(localSendImm, n)); err != nil {
		return fmt.Errorf("Send with Immediate: %w", err)
	}
	// Read back the Write.
	if err := p.qp.Read(ctx, sub(slotWrite, nw), p.local.SGE(localSink, nw)); err != nil {
		return fmt.Errorf("Read: %w", err)
	}
	if at := badPattern(buf[localSink:][:nw], i, seq, kindWrite); at >= 0 {
		return fmt.Errorf("Read after Write: byte %d of %d wrong", at, nw)
	}
	// Read V2 of a part of the static region.
	n = patternSize(i, seq, kindStatic, loadReadV2Max)
	off := int(patternSeed(i, seq, 'o') % uint32(loadStatic-n+1))
	if err := p.qp.ReadV2(ctx, sub(slotStatic+off, n), p.local.SGE(localSinkV2, n)); err != nil {
		return fmt.Errorf("Read V2: %w", err)
	}
	if got := buf[localSinkV2:][:n]; string(got) != string(p.static[off:off+n]) {
		return fmt.Errorf("Read V2 of %d bytes at %d: wrong data", n, off)
	}
	// FetchAdd on the shared counter.
	counter, _ := words.Slice(0, 8)
	old, err := p.qp.FetchAdd(ctx, counter, 1)
	if err != nil {
		return fmt.Errorf("FetchAdd: %w", err)
	}
	p.fetched = append(p.fetched, old)
	if seq%loadCASEvery == 0 {
		if err := p.casIncrement(ctx, words); err != nil {
			return err
		}
	}
	// The server's acknowledgement of this iteration.
	c, err := p.cq.Next(ctx)
	if err != nil {
		return fmt.Errorf("acknowledgement: %w", err)
	}
	if c.Status != iwarp.StatusSuccess || c.Op != iwarp.OpRecv || !c.HasImmediate || c.Immediate != uint64(seq) {
		return fmt.Errorf("acknowledgement: %v %v immediate %v %d, want %d: %v", c.Op, c.Status, c.HasImmediate, c.Immediate, seq, c.Err)
	}
	p.iterations++
	return p.postAck()
}

// casIncrement adds one to the CompareSwap counter with a CompareSwap
// loop: each failed attempt learns the current value.
func (p *loadPair) casIncrement(ctx context.Context, words iwarp.RemoteBuffer) error {
	w, _ := words.Slice(uint32(8+8*(p.idx%loadCASWords)), 8)
	for {
		p.casTries++
		old, err := p.qp.CompareSwap(ctx, w, p.casGuess, p.casGuess+1)
		if err != nil {
			return fmt.Errorf("CompareSwap: %w", err)
		}
		if old == p.casGuess {
			p.casDone++
			p.casGuess++
			return nil
		}
		p.casGuess = old
	}
}
