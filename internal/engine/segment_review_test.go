package engine

// An adversarial review of the segment checks and teardown fixes of the
// review's defects 4, 8, 9, 10 and 11 (single-segment checks, a continuing
// segment's opcode, PostRecv during teardown, concurrent Close of an idle
// QP, a Read V2 Response cut short). Each test bounds every wait.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

const reviewWait = 10 * time.Second

// reviewDone waits for the QP's teardown, at most reviewWait.
func reviewDone(t *testing.T, qp *QP, what string) {
	t.Helper()
	select {
	case <-qp.Done():
	case <-time.After(reviewWait):
		t.Fatalf("%s: QP not torn down after %v (state %v, err %v)", what, reviewWait, qp.State(), qp.Err())
	}
}

// reviewPollAll returns every completion in cq now.
func reviewPollAll(cq *CQ) []CQE {
	var all []CQE
	var out [16]CQE
	for n := cq.Poll(out[:]); n > 0; n = cq.Poll(out[:]) {
		all = append(all, out[:n]...)
	}
	return all
}

// reviewRawSide starts a QP against a raw peer (CRC on), V2 or not, after
// setup ran on the idle side.
func reviewRawSide(t *testing.T, o pairOpts, v2 bool, setup func(a *side)) (*side, *rawPeer) {
	t.Helper()
	ca, cb := tcpPair(t)
	a := newSide(t, o, ca)
	a.params.V2 = v2
	if setup != nil {
		setup(a)
	}
	a.start(t, o)
	t.Cleanup(func() { _ = a.qp.Close(); cb.Close() })
	return a, &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{CRC: o.crc})}
}

// ---------------------------------------------------------------------------
// Finding candidate 1: an Immediate Data message that continues the active
// Send (same QN 0, same MSN, MO = bytes placed so far = 0) is a continuing
// segment with another opcode. docs/wire.md: "a continuing segment of an
// untagged message whose opcode is not the first segment's" is RDMAP/2/0x06,
// "checked after the MSN (another MSN is a second message interleaved,
// DDP/2/0x03)". The MSN here is the Send's own, so the code must be 0x06;
// rxImmediate reports "Immediate Data MSN out of range" (DDP/2/0x03).
func TestReviewImmediateContinuingSendSameMSN(t *testing.T) {
	cases := []struct {
		name  string
		v2    bool
		first []byte // the Send's first segment (L=0, MO 0, no payload)
		imm   []byte // the Immediate Data header (L=1, MO 0, same MSN)
	}{
		{"Send-then-Immediate", false, untagged(0x3, false, 0, 0, 1, 0), untagged(0x8, true, 0, 0, 1, 0)},
		{"SendSE-then-ImmediateSE", false, untagged(0x5, false, 0, 0, 1, 0), untagged(0x9, true, 0, 0, 1, 0)},
		{"V2-Send-with-Immediate-then-Immediate", true, untaggedV2(0x13, false, 0, 0, 1, 0), untaggedV2(0x8, true, 0, 0, 1, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := pairOpts{crc: true, ird: 1, ord: 1, ext: true}
			var rb *mem.Region
			a, peer := reviewRawSide(t, o, c.v2, func(a *side) {
				rb, _, _ = a.register(t, 64, mem.AccessLocalWrite)
				if _, err := a.qp.PostRecv([]RecvWR{{ID: 5, SGL: []SGE{{Region: rb, Len: 64}}}}); err != nil {
					t.Fatal(err)
				}
			})
			peer.send(t, c.first)
			offending := cat(c.imm, binary.BigEndian.AppendUint64(nil, 0x1122334455667788))
			peer.send(t, offending)
			got := peer.readULPDU(t)
			want := wantTerminate(wire.TermRDMAPUnexpectedOpcode, offending, 18, false)
			if c.v2 {
				want = wantTerminateV2(wire.TermRDMAPUnexpectedOpcode, offending, 18)
			}
			if !bytes.Equal(got, want) {
				var gotCode wire.TermCode
				if tm, err := wire.ParseTerminate(got[18:]); err == nil {
					gotCode = tm.Code
				}
				t.Errorf("Terminate for a continuing segment of MSN 1 with the Immediate Data opcode:\n got % x (%v)\nwant % x (%v)",
					got, gotCode, want, wire.TermRDMAPUnexpectedOpcode)
			}
			peer.nc.Close()
			reviewDone(t, a.qp, "after the Terminate")
			cs := reviewPollAll(a.rcq)
			if len(cs) != 1 || cs[0].ID != 5 || cs[0].Status != StatusFlushed {
				t.Errorf("receive completions %+v, want receive 5 flushed once", cs)
			}
		})
	}
}

// The same shape on QN 3, for comparison: a Read V2 Response whose first
// segment (L=0, no payload) is continued by an Atomic Response of the same
// MSN at MO 0. This one is RDMAP/2/0x06 (ErrUnexpectedAtomicResponse):
// the QN 0 case above is the odd one out.
func TestReviewReadV2ResponseContinuedByAtomicResponse(t *testing.T) {
	o := pairOpts{crc: true, ird: 4, ord: 4, ext: true}
	var sink *mem.Region
	a, peer := reviewRawSide(t, o, true, func(a *side) {
		sink, _, _ = a.register(t, 16, mem.AccessLocalWrite)
	})
	if _, err := a.qp.PostSend([]SendWR{{ID: 1, Op: OpReadV2, Flags: Signaled, SGL: []SGE{{Region: sink, Len: 16}}, RemoteSTag: 0x2000}}); err != nil {
		t.Fatal(err)
	}
	peer.readULPDU(t) // the Read V2 Request
	peer.send(t, untaggedV2(0x12, false, 0, 3, 1, 0))
	resp := make([]byte, 12)
	offending := cat(untaggedV2(0xB, true, 0, 3, 1, 0), resp)
	peer.send(t, offending)
	got := peer.readULPDU(t)
	if want := wantTerminateV2(wire.TermRDMAPUnexpectedOpcode, offending, 18); !bytes.Equal(got, want) {
		t.Errorf("Terminate\n got % x\nwant % x", got, want)
	}
	peer.nc.Close()
	reviewDone(t, a.qp, "after the Terminate")
}

// ---------------------------------------------------------------------------
// The single-segment and continuing-opcode checks must not touch legal
// multi-segment messages or the RFC 6581 RTR shapes (siw's and ours).
func TestReviewSegmentChecksSpareLegalMessages(t *testing.T) {
	t.Run("V1", func(t *testing.T) {
		o := pairOpts{crc: true, ird: 4, ord: 4}
		var rb [3]*mem.Region
		var wr, sink *mem.Region
		var wrBuf []byte
		a, peer := reviewRawSide(t, o, false, func(a *side) {
			for i := range rb {
				rb[i], _, _ = a.register(t, 64, mem.AccessLocalWrite)
				if _, err := a.qp.PostRecv([]RecvWR{{ID: uint64(10 + i), SGL: []SGE{{Region: rb[i], Len: 64}}}}); err != nil {
					t.Fatal(err)
				}
			}
			wr, wrBuf, _ = a.register(t, 64, mem.AccessRemoteWrite|mem.AccessLocalWrite)
			sink, _, _ = a.register(t, 8, mem.AccessLocalWrite)
		})
		// RFC 6581 RTRs as siw and this stack send them.
		peer.send(t, tagged(0, true, 1, 0))                                         // Write RTR
		peer.send(t, cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0, 0, 0, 1, 0))) // Read RTR: L=1, MO 0
		if got, want := peer.readULPDU(t), tagged(2, true, 0, 0); !bytes.Equal(got, want) {
			t.Fatalf("answer to the Read RTR % x, want % x", got, want)
		}
		peer.send(t, untagged(3, true, 0, 0, 1, 0)) // Send RTR (zero-length Send)
		// A three-segment Send, a two-segment Send with SE.
		peer.send(t, cat(untagged(3, false, 0, 0, 2, 0), []byte("abcd")))
		peer.send(t, cat(untagged(3, false, 0, 0, 2, 4), []byte("efgh")))
		peer.send(t, cat(untagged(3, true, 0, 0, 2, 8), []byte("ij")))
		peer.send(t, cat(untagged(5, false, 0, 0, 3, 0), []byte("kl")))
		peer.send(t, cat(untagged(5, true, 0, 0, 3, 2), []byte("mn")))
		// A two-segment Write.
		peer.send(t, cat(tagged(0, false, uint32(wr.STag()), wr.Base()), []byte("1234")))
		peer.send(t, cat(tagged(0, true, uint32(wr.STag()), wr.Base()+4), []byte("5678")))
		// A two-segment Read Response to our Read.
		if _, err := a.qp.PostSend([]SendWR{{ID: 1, Op: OpRead, Flags: Signaled, SGL: []SGE{{Region: sink, Len: 8}}, RemoteSTag: 0x4400}}); err != nil {
			t.Fatal(err)
		}
		u, err := wire.ParseULPDU(peer.readULPDU(t))
		if err != nil || u.Opcode != wire.OpReadRequest {
			t.Fatalf("want our Read Request: %v %v", u.Opcode, err)
		}
		rr := u.ReadRequest
		peer.send(t, cat(tagged(2, false, rr.SinkSTag, rr.SinkTO), []byte("ABCD")))
		peer.send(t, cat(tagged(2, true, rr.SinkSTag, rr.SinkTO+4), []byte("EFGH")))
		wantLens := map[uint64]uint32{10: 0, 11: 10, 12: 4}
		for i := 0; i < 3; i++ {
			c := waitCQE(t, a.rcq)
			if c.Status != StatusSuccess || c.Len != wantLens[c.ID] {
				t.Fatalf("receive %+v (QP %v: %v)", c, a.qp.State(), a.qp.Err())
			}
		}
		if c := waitCQE(t, a.scq); c.ID != 1 || c.Status != StatusSuccess {
			t.Fatalf("Read %+v (QP %v: %v)", c, a.qp.State(), a.qp.Err())
		}
		if string(sink.Bytes()) != "ABCDEFGH" {
			t.Fatalf("Read sink %q", sink.Bytes())
		}
		// The Write was placed before the Read Response (in order).
		if string(wrBuf[:8]) != "12345678" {
			t.Fatalf("Write target %q", wrBuf[:8])
		}
		if s := a.qp.State(); s != StateRTS {
			t.Fatalf("state %v: %v", s, a.qp.Err())
		}
	})
	t.Run("V2", func(t *testing.T) {
		o := pairOpts{crc: true, ird: 4, ord: 4, ext: true}
		var rb [2]*mem.Region
		var sink *mem.Region
		a, peer := reviewRawSide(t, o, true, func(a *side) {
			for i := range rb {
				rb[i], _, _ = a.register(t, 64, mem.AccessLocalWrite)
				if _, err := a.qp.PostRecv([]RecvWR{{ID: uint64(20 + i), SGL: []SGE{{Region: rb[i], Len: 64}}}}); err != nil {
					t.Fatal(err)
				}
			}
			sink, _, _ = a.register(t, 8, mem.AccessLocalWrite)
		})
		imm := binary.BigEndian.AppendUint64(nil, 0xfeedface)
		// Send with Immediate: two payload segments (L=0) then the
		// immediate segment.
		peer.send(t, cat(untaggedV2(0x13, false, 0, 0, 1, 0), []byte("abcd")))
		peer.send(t, cat(untaggedV2(0x13, false, 0, 0, 1, 4), []byte("efgh")))
		peer.send(t, cat(untaggedV2(0x13, true, 0, 0, 1, 8), imm))
		// Immediate Data, legal: L=1, MO 0.
		peer.send(t, cat(untaggedV2(0x8, true, 0, 0, 2, 0), imm))
		// Read V2 with a two-segment response.
		if _, err := a.qp.PostSend([]SendWR{{ID: 2, Op: OpReadV2, Flags: Signaled, SGL: []SGE{{Region: sink, Len: 8}}, RemoteSTag: 0x2000}}); err != nil {
			t.Fatal(err)
		}
		peer.readULPDU(t)
		peer.send(t, cat(untaggedV2(0x12, false, 0, 3, 1, 0), []byte("WXYZ")))
		peer.send(t, cat(untaggedV2(0x12, true, 0, 3, 1, 4), []byte("wxyz")))
		for i := 0; i < 2; i++ {
			c := waitCQE(t, a.rcq)
			if c.Status != StatusSuccess || c.Flags&HasImm == 0 || c.Imm != 0xfeedface {
				t.Fatalf("receive %+v (QP %v: %v)", c, a.qp.State(), a.qp.Err())
			}
		}
		if c := waitCQE(t, a.scq); c.ID != 2 || c.Status != StatusSuccess {
			t.Fatalf("Read V2 %+v (QP %v: %v)", c, a.qp.State(), a.qp.Err())
		}
		if string(sink.Bytes()) != "WXYZwxyz" {
			t.Fatalf("Read V2 sink %q", sink.Bytes())
		}
	})
}

// ---------------------------------------------------------------------------
// SRQ: a QP's flush (torn down by its peer, or closed never connected) must
// leave the SRQ open for the other QPs drawing from it; the receive the
// torn-down QP had taken is flushed once, on its own CQ.
func TestReviewSRQSurvivesOtherQPFlush(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	const pd = 7
	srq, err := NewSRQ(8, 1)
	if err != nil {
		t.Fatal(err)
	}
	newQP := func() (*QP, *CQ) {
		scq, rcq := NewCQ(16, nil), NewCQ(16, nil)
		qp, err := New(Config{Table: table, PD: pd, SendCQ: scq, RecvCQ: rcq, SRQ: srq, SQDepth: 4, MaxSGE: 1, DrainTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return qp, rcq
	}
	start := func(qp *QP) *rawPeer {
		ca, cb := tcpPair(t)
		if err := qp.Start(fpdu.NewConn(ca, fpdu.Options{CRC: true}), Params{IRD: 1, ORD: 1}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = qp.Close(); cb.Close() })
		return &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{CRC: true})}
	}
	var bufs [][]byte
	for i := 0; i < 4; i++ {
		b := make([]byte, 16)
		r, err := table.Register(pd, b, mem.AccessLocalWrite, 0)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
		if _, err := srq.PostRecv([]RecvWR{{ID: uint64(10 + i), SGL: []SGE{{Region: r, Len: 16}}}}); err != nil {
			t.Fatal(err)
		}
	}
	qa, rcqA := newQP()
	qb, rcqB := newQP()
	qc, rcqC := newQP()
	pa, pb := start(qa), start(qb)

	// A takes receive 10 with the first segment of a Send, then its peer
	// goes away: A's teardown flushes receive 10 only.
	pa.send(t, cat(untagged(3, false, 0, 0, 1, 0), []byte("abcd")))
	ctx, cancel := context.WithTimeout(context.Background(), reviewWait)
	defer cancel()
	for srq.Posted() != 3 {
		if ctx.Err() != nil {
			t.Fatalf("A never took a receive (posted %d)", srq.Posted())
		}
		time.Sleep(time.Millisecond)
	}
	pa.nc.Close()
	reviewDone(t, qa, "A")
	// C never connected: its Close flushes nothing of the SRQ.
	if err := qc.Close(); err != nil {
		t.Fatal(err)
	}
	if cs := reviewPollAll(rcqC); len(cs) != 0 {
		t.Fatalf("C flushed SRQ receives: %+v", cs)
	}
	if cs := reviewPollAll(rcqA); len(cs) != 1 || cs[0].ID != 10 || cs[0].Status != StatusFlushed {
		t.Fatalf("A's completions %+v, want receive 10 flushed once", cs)
	}
	if n := srq.Posted(); n != 3 {
		t.Fatalf("SRQ holds %d receives after A and C went, want 3", n)
	}
	// The SRQ still takes receives and B still uses them.
	r, _ := table.Register(pd, make([]byte, 16), mem.AccessLocalWrite, 0)
	if n, err := srq.PostRecv([]RecvWR{{ID: 99, SGL: []SGE{{Region: r, Len: 16}}}}); n != 1 || err != nil {
		t.Fatalf("SRQ PostRecv after another QP's flush: %d, %v", n, err)
	}
	pb.send(t, cat(untagged(3, true, 0, 0, 1, 0), []byte("hello")))
	if c := waitCQE(t, rcqB); c.ID != 11 || c.Status != StatusSuccess || c.Len != 5 {
		t.Fatalf("B's receive %+v (B %v: %v)", c, qb.State(), qb.Err())
	}
	if string(bufs[1][:5]) != "hello" {
		t.Fatalf("receive 11 holds %q", bufs[1][:5])
	}
}

// ---------------------------------------------------------------------------
// PostRecv racing the teardown of a connected QP (peer FIN, peer RST-ish
// close, local Close): every receive PostRecv accepted completes exactly
// once, flushed; none it refused completes; the refusal is ErrQPState.
func TestReviewPostRecvRacingTeardownExactlyOnce(t *testing.T) {
	const rounds = 40
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	for round := 0; round < rounds; round++ {
		kind := round % 3
		t.Run(fmt.Sprintf("%d/%s", round, []string{"peer-FIN", "local-Close", "Terminate"}[kind]), func(t *testing.T) {
			o := pairOpts{crc: true, depth: 2048}
			var rb *mem.Region
			a, peer := reviewRawSide(t, o, false, func(a *side) {
				rb, _, _ = a.register(t, 8, mem.AccessLocalWrite)
			})
			var posted atomic.Int64
			type result struct {
				accepted int
				err      error
				panicked any
			}
			res := make(chan result, 1)
			go func() {
				var r result
				defer func() {
					r.panicked = recover()
					res <- r
				}()
				for i := 0; i < 2000; i++ {
					n, err := a.qp.PostRecv([]RecvWR{{ID: uint64(i), SGL: []SGE{{Region: rb, Len: 8}}}})
					r.accepted += n
					posted.Store(int64(r.accepted))
					if err != nil {
						r.err = err
						return
					}
				}
			}()
			trigger := int64(rng.IntN(200))
			deadline := time.Now().Add(reviewWait)
			for posted.Load() < trigger && time.Now().Before(deadline) {
			}
			switch kind {
			case 0:
				peer.nc.Close()
			case 1:
				_ = a.qp.Close()
			case 2: // a hostile segment: Send to QN 5
				peer.send(t, cat(untagged(3, true, 0, 5, 1, 0), []byte("x")))
			}
			reviewDone(t, a.qp, "teardown")
			var r result
			select {
			case r = <-res:
			case <-time.After(reviewWait):
				t.Fatal("PostRecv has not returned")
			}
			if r.panicked != nil {
				t.Fatalf("PostRecv panicked: %v", r.panicked)
			}
			if r.err == nil {
				t.Logf("the poster finished before the teardown: no race this round")
			}
			if r.err != nil && !errors.Is(r.err, ErrQPState) {
				t.Fatalf("PostRecv refused with %v, want ErrQPState", r.err)
			}
			cs := reviewPollAll(a.rcq)
			seen := map[uint64]int{}
			for _, c := range cs {
				seen[c.ID]++
				if c.Status != StatusFlushed {
					t.Errorf("receive %d completed %v, want flushed", c.ID, c.Status)
				}
			}
			for i := 0; i < r.accepted; i++ {
				if seen[uint64(i)] != 1 {
					t.Errorf("accepted receive %d completed %d times (accepted %d, err %v)", i, seen[uint64(i)], r.accepted, r.err)
				}
			}
			if len(cs) != r.accepted {
				t.Errorf("%d completions for %d accepted receives", len(cs), r.accepted)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// A never-connected QP hit at once by two Close calls, a Disconnect and a
// PostRecv loop: nothing panics, everything returns, Done is closed, every
// accepted receive is flushed once.
func TestReviewIdleCloseDisconnectPostRecvStorm(t *testing.T) {
	const rounds = 200
	table := mem.NewTable(mem.TableOptions{})
	for round := 0; round < rounds; round++ {
		scq, rcq := NewCQ(4, nil), NewCQ(64, nil)
		qp, err := New(Config{Table: table, PD: 1, SendCQ: scq, RecvCQ: rcq, SQDepth: 1, RQDepth: 64, MaxSGE: 1})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		gate := make(chan struct{})
		panics := make(chan any, 4)
		var accepted atomic.Int64
		run := func(f func()) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if r := recover(); r != nil {
						panics <- r
					}
				}()
				<-gate
				f()
			}()
		}
		run(func() { _ = qp.Close() })
		run(func() { _ = qp.Close() })
		run(func() {
			ctx, cancel := context.WithTimeout(context.Background(), reviewWait)
			defer cancel()
			_ = qp.Disconnect(ctx)
		})
		run(func() {
			for i := 0; i < 64; i++ {
				n, err := qp.PostRecv([]RecvWR{{ID: uint64(i)}})
				accepted.Add(int64(n))
				if err != nil {
					return
				}
			}
		})
		close(gate)
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(reviewWait):
			t.Fatalf("round %d: Close/Disconnect/PostRecv on an idle QP hung", round)
		}
		select {
		case p := <-panics:
			t.Fatalf("round %d: panic: %v", round, p)
		default:
		}
		select {
		case <-qp.Done():
		default:
			t.Fatalf("round %d: all returned but Done is open", round)
		}
		cs := reviewPollAll(rcq)
		if int64(len(cs)) != accepted.Load() {
			t.Fatalf("round %d: %d completions for %d accepted receives", round, len(cs), accepted.Load())
		}
		for i, c := range cs {
			if c.ID != uint64(i) || c.Status != StatusFlushed {
				t.Fatalf("round %d: completion %d is %+v", round, i, c)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Start racing Close on a fresh QP (defect 9's neighbour): either Start
// loses (ErrQPState, the idle teardown ran once) or it wins and Close tears
// the started QP down; Close returns, Done is closed, the posted receive
// is flushed exactly once, nothing panics.
func TestReviewStartRacingClose(t *testing.T) {
	const rounds = 100
	table := mem.NewTable(mem.TableOptions{})
	for round := 0; round < rounds; round++ {
		scq, rcq := NewCQ(4, nil), NewCQ(4, nil)
		qp, err := New(Config{Table: table, PD: 1, SendCQ: scq, RecvCQ: rcq, SQDepth: 1, RQDepth: 4, MaxSGE: 1, DrainTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := qp.PostRecv([]RecvWR{{ID: 7}}); err != nil {
			t.Fatal(err)
		}
		ca, cb := tcpPair(t)
		gate := make(chan struct{})
		startErr := make(chan error, 1)
		closed := make(chan any, 1)
		go func() {
			<-gate
			startErr <- qp.Start(fpdu.NewConn(ca, fpdu.Options{}), Params{IRD: 1, ORD: 1})
		}()
		go func() {
			defer func() { closed <- recover() }()
			<-gate
			for i := 0; i < (round%8)*(round%8)*20; i++ { // vary who wins
				runtime.Gosched()
			}
			_ = qp.Close()
		}()
		close(gate)
		var serr error
		select {
		case serr = <-startErr:
		case <-time.After(reviewWait):
			t.Fatalf("round %d: Start hung", round)
		}
		select {
		case p := <-closed:
			if p != nil {
				t.Fatalf("round %d: Close panicked: %v", round, p)
			}
		case <-time.After(reviewWait):
			t.Fatalf("round %d: Close hung (Start: %v)", round, serr)
		}
		if serr != nil && !errors.Is(serr, ErrQPState) {
			t.Fatalf("round %d: Start: %v", round, serr)
		}
		if serr != nil {
			ca.Close()
		}
		select {
		case <-qp.Done():
		case <-time.After(reviewWait):
			t.Fatalf("round %d: Done open after Close (Start: %v)", round, serr)
		}
		cb.Close()
		cs := reviewPollAll(rcq)
		if len(cs) != 1 || cs[0].ID != 7 || cs[0].Status != StatusFlushed {
			t.Fatalf("round %d: completions %+v (Start: %v), want receive 7 flushed once", round, cs, serr)
		}
	}
}
