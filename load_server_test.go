package iwarp_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/goiwarp/iwarp"
)

// The responder side of the load test: one Device whose QPs share a few
// CQs, each drained by one poller goroutine that verifies every received
// message and answers each iteration with an Immediate Data acknowledgement
// (the credit that lets the client start its next iteration).

// Sizes of the load test's buffers.
const (
	loadGuard     = 64   // canary bytes either side of every region
	loadMsgMax    = 1024 // Send and Send with Immediate payloads: 1..loadMsgMax bytes
	loadWriteMax  = 2048 // Write and Write with Immediate payloads: 1..loadWriteMax bytes
	loadStatic    = 4096 // the per-QP region read with Read V2 (written before registration)
	loadReadV2Max = 1024 // Read V2 sizes: 1..loadReadV2Max bytes
	loadRecvDepth = 8    // receives each server QP keeps posted
	loadSendDepth = 4
	loadServerCQs = 4
)

// Offsets in a server QP's slot region.
const (
	slotWrite    = 0                           // Write target, read back by the client
	slotWriteImm = loadWriteMax                // Write with Immediate target, checked by the server
	slotStatic   = 2 * loadWriteMax            // static pattern, read with Read V2
	slotSize     = 2*loadWriteMax + loadStatic // bytes of the slot region
)

// Kinds of payload (the kind byte of the patterns) and of Immediate Data.
const (
	kindSend    = 'S'
	kindWrite   = 'W'
	kindWImm    = 'I'
	kindSendImm = 'V'
	kindStatic  = 'R'
)

// loadImm is the Immediate Data of (qp, seq, kind).
func loadImm(qp, seq int, kind byte) uint64 {
	return uint64(qp)<<40 | uint64(uint32(seq))<<8 | uint64(kind)
}

// loadServer is the responder Device of the load test.
type loadServer struct {
	dev   *iwarp.Device
	pd    *iwarp.PD
	cqs   []*iwarp.CQ
	words *iwarp.MR // word 0: the FetchAdd counter; words 1..loadCASWords: the CompareSwap counters
	wbuf  *guarded
	qps   []*loadServerQP
	byQP  map[uint32]*loadServerQP // read-only once set up
	fail  func(error)
}

// loadServerQP is one responder QP and its memory.
type loadServerQP struct {
	idx        int
	qp         *iwarp.QP
	slot, recv *iwarp.MR
	sbuf, rbuf *guarded
	// seq and phase (which message of the iteration comes next) belong
	// to the poller of the QP's CQ.
	seq, phase int
	acks       int
}

// newLoadServer creates the responder side with n QPs, receives posted.
func newLoadServer(n int, fail func(error)) (*loadServer, error) {
	s := &loadServer{dev: iwarp.NewDevice(nil), byQP: make(map[uint32]*loadServerQP, n), fail: fail}
	var err error
	if s.pd, err = s.dev.AllocPD(); err != nil {
		return nil, err
	}
	per := (n + loadServerCQs - 1) / loadServerCQs
	for range loadServerCQs {
		cq, err := s.dev.NewCQ(per*(loadRecvDepth+loadSendDepth), nil)
		if err != nil {
			return nil, err
		}
		s.cqs = append(s.cqs, cq)
	}
	s.wbuf = newGuarded(8+8*loadCASWords, loadGuard)
	if s.words, err = s.pd.RegisterMemory(s.wbuf.bytes(), iwarp.AccessRemoteAtomic); err != nil {
		return nil, err
	}
	for i := range n {
		q := &loadServerQP{idx: i, sbuf: newGuarded(slotSize, loadGuard), rbuf: newGuarded(loadRecvDepth*loadMsgMax, loadGuard)}
		fillPattern(q.sbuf.bytes()[slotStatic:], i, 0, kindStatic)
		if q.slot, err = s.pd.RegisterMemory(q.sbuf.bytes(), iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead); err != nil {
			return nil, err
		}
		if q.recv, err = s.pd.RegisterMemory(q.rbuf.bytes(), iwarp.AccessLocalWrite); err != nil {
			return nil, err
		}
		cq := s.cqs[i%loadServerCQs]
		q.qp, err = s.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: loadSendDepth, RecvQueueDepth: loadRecvDepth})
		if err != nil {
			return nil, err
		}
		for id := range loadRecvDepth {
			if err := q.repost(uint64(id)); err != nil {
				return nil, err
			}
		}
		s.qps = append(s.qps, q)
		s.byQP[q.qp.Num()] = q
	}
	return s, nil
}

// repost posts receive id (buffer id of the receive region) again.
func (q *loadServerQP) repost(id uint64) error {
	return q.qp.PostRecv(iwarp.RecvWR{ID: id, SGL: []iwarp.SGE{q.recv.SGE(int(id)*loadMsgMax, loadMsgMax)}})
}

// poll drains cq until ctx ends, verifying every completion.
func (s *loadServer) poll(ctx context.Context, cq *iwarp.CQ) {
	var cs [64]iwarp.Completion
	for {
		n := cq.Poll(cs[:])
		for i := range n {
			if err := s.handle(&cs[i]); err != nil {
				s.fail(err)
			}
		}
		if n == 0 && cq.Wait(ctx) != nil {
			return
		}
	}
}

// handle verifies one completion of a server QP: the three messages of an
// iteration arrive in order (Send, Write with Immediate, Send with
// Immediate); after the third the QP acknowledges the iteration.
func (s *loadServer) handle(c *iwarp.Completion) error {
	q := s.byQP[c.QPNum]
	if q == nil {
		return fmt.Errorf("completion of an unknown QP: %+v", c)
	}
	if c.Status != iwarp.StatusSuccess {
		return fmt.Errorf("server QP %d: %v completed %v: %v", q.idx, c.Op, c.Status, c.Err)
	}
	if c.Op != iwarp.OpRecv {
		if c.Op != iwarp.OpImmediate {
			return fmt.Errorf("server QP %d: unexpected send completion %v", q.idx, c.Op)
		}
		q.acks++
		return nil
	}
	if c.ID >= loadRecvDepth {
		return fmt.Errorf("server QP %d: receive ID %d", q.idx, c.ID)
	}
	got := q.rbuf.bytes()[int(c.ID)*loadMsgMax:][:c.Len]
	var err error
	switch q.phase {
	case 0: // Send
		err = checkMessage(got, c, false, 0, q.idx, q.seq, kindSend, loadMsgMax)
	case 1: // Write with Immediate: the Write is visible once its receive completed
		if err = checkMessage(got, c, true, loadImm(q.idx, q.seq, kindWImm), q.idx, q.seq, kindWImm, 0); err == nil {
			n := patternSize(q.idx, q.seq, kindWImm, loadWriteMax)
			if at := badPattern(q.sbuf.bytes()[slotWriteImm:][:n], q.idx, q.seq, kindWImm); at >= 0 {
				err = fmt.Errorf("Write with Immediate: byte %d of %d wrong", at, n)
			}
		}
	case 2: // Send with Immediate
		err = checkMessage(got, c, true, loadImm(q.idx, q.seq, kindSendImm), q.idx, q.seq, kindSendImm, loadMsgMax)
	}
	if err != nil {
		return fmt.Errorf("server QP %d seq %d: %w", q.idx, q.seq, err)
	}
	if err := q.repost(c.ID); err != nil {
		return fmt.Errorf("server QP %d: repost: %w", q.idx, err)
	}
	if q.phase++; q.phase == 3 {
		err := q.qp.PostSend(iwarp.SendWR{ID: uint64(q.seq), Op: iwarp.OpImmediate, Flags: iwarp.Signaled, Immediate: uint64(q.seq)})
		if err != nil {
			return fmt.Errorf("server QP %d: acknowledgement: %w", q.idx, err)
		}
		q.phase = 0
		q.seq++
	}
	return nil
}

// checkMessage verifies a receive completion: its Immediate Data (if
// withImm) and, if maxn > 0, that its payload is the pattern of (qp, seq,
// kind) of the expected size.
func checkMessage(got []byte, c *iwarp.Completion, withImm bool, imm uint64, qp, seq int, kind byte, maxn int) error {
	if c.HasImmediate != withImm || (withImm && c.Immediate != imm) {
		return fmt.Errorf("%c: immediate %v %#x, want %v %#x", kind, c.HasImmediate, c.Immediate, withImm, imm)
	}
	if maxn == 0 {
		return nil
	}
	if n := patternSize(qp, seq, kind, maxn); c.Len != n {
		return fmt.Errorf("%c: received %d bytes, want %d", kind, c.Len, n)
	}
	if at := badPattern(got, qp, seq, kind); at >= 0 {
		return fmt.Errorf("%c: byte %d of %d wrong", kind, at, len(got))
	}
	return nil
}

// startPollers runs one poller per CQ until ctx ends; the returned wait
// function waits for them.
func (s *loadServer) startPollers(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for _, cq := range s.cqs {
		wg.Go(func() { s.poll(ctx, cq) })
	}
	return wg.Wait
}
