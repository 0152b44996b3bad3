package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// Tests of the receive role (rxrole.go): a waiter that borrows it reads
// and handles FPDUs itself; everything it cannot finish goes back to the
// receive goroutine.

// eventually fails the test unless cond becomes true within 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// waitBorrowed waits until a waiter holds qp's receive role and waits for
// the socket.
func waitBorrowed(t *testing.T, qp *QP) {
	t.Helper()
	eventually(t, "a waiter borrowed the receive role", func() bool {
		return qp.role.state.Load() == roleBorrowed && qp.role.polling.Load()
	})
}

// asyncWait runs cq.Wait(ctx) and then a Poll on another goroutine.
func asyncWait(ctx context.Context, cq *CQ) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		err := cq.Wait(ctx)
		var out [1]CQE
		n := 0
		if err == nil {
			n = cq.Poll(out[:])
		}
		ch <- waitResult{c: out[0], n: n, err: err}
	}()
	return ch
}

type waitResult struct {
	c   CQE
	n   int
	err error
}

func (w waitResult) check(t *testing.T, id uint64) CQE {
	t.Helper()
	if w.err != nil || w.n != 1 || w.c.ID != id {
		t.Fatalf("wait: %v, %d completions, %+v; want completion %d", w.err, w.n, w.c, id)
	}
	return w.c
}

func recvResult(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not return")
	}
	return waitResult{}
}

// lend makes a's receive goroutine lend its role: with a waiter counted,
// two small Sends from the peer (MSNs msn and msn+1, into receives id and
// id+1) arrive, and at the next FPDU boundary the receive goroutine lends
// the role. The next Send's MSN is msn+2.
func lend(t *testing.T, a *side, peer *rawPeer, r *mem.Region, id uint64, msn uint32) {
	t.Helper()
	a.qp.role.wanted.Add(1) // a waiter, as far as the receive goroutine can tell
	defer a.qp.role.wanted.Add(-1)
	for k := range uint32(2) {
		if _, err := a.qp.PostRecv([]RecvWR{{ID: id + uint64(k), SGL: []SGE{{Region: r, Len: 64}}}}); err != nil {
			t.Fatal(err)
		}
		peer.send(t, cat(untagged(3, true, 0, 0, msn+k, 0), []byte("warm")))
		var out [1]CQE
		eventually(t, "the warm-up Send completed", func() bool { return a.rcq.Poll(out[:]) == 1 })
		if out[0].ID != id+uint64(k) || out[0].Status != StatusSuccess {
			t.Fatalf("warm-up completion %+v", out[0])
		}
	}
	eventually(t, "the role is lent", func() bool { return a.qp.role.state.Load() != roleLoop })
}

// borrowedRecv returns a QP (with a raw peer) whose receive goroutine lent
// its role, with receive 3 (64 bytes into buf) posted and a goroutine
// waiting on the receive CQ that borrowed the role; the peer's next Send
// has MSN 3.
func borrowedRecv(t *testing.T) (a *side, peer *rawPeer, buf []byte, ch <-chan waitResult) {
	t.Helper()
	var r *mem.Region
	a, peer = rawSide(t, pairOpts{crc: true}, func(a *side) { r, buf, _ = a.register(t, 64, mem.AccessLocalWrite) })
	lend(t, a, peer, r, 1, 1)
	if _, err := a.qp.PostRecv([]RecvWR{{ID: 3, SGL: []SGE{{Region: r, Len: 64}}}}); err != nil {
		t.Fatal(err)
	}
	ch = asyncWait(context.Background(), a.rcq)
	waitBorrowed(t, a.qp)
	return a, peer, buf, ch
}

// TestWaiterReadsTheSocket: once the receive goroutine lent its role, a
// goroutine waiting on the CQ reads and handles the next Send itself.
func TestWaiterReadsTheSocket(t *testing.T) {
	a, peer, buf, ch := borrowedRecv(t)
	before := a.qp.stats.FPDUsByWaiters.Load()
	peer.send(t, cat(untagged(3, true, 0, 0, 3, 0), []byte("by the waiter")))
	if c := recvResult(t, ch).check(t, 3); c.Len != 13 || !bytes.Equal(buf[:13], []byte("by the waiter")) {
		t.Fatalf("completion %+v, data %q", c, buf[:13])
	}
	if got := a.qp.stats.FPDUsByWaiters.Load() - before; got != 1 {
		t.Fatalf("FPDUs handled by waiters: %d, want 1", got)
	}
}

// TestBlockingCallsBorrow: blocking Reads (Await) on a connected pair are
// completed by their own goroutines reading the socket, and every one
// places the right bytes.
func TestBlockingCallsBorrow(t *testing.T) {
	o := pairOpts{crc: true, ird: 4, ord: 4}
	var src *mem.Region
	var sbuf []byte
	a, _, _ := startedPair(t, o, func(a, b *side) {
		src, sbuf, _ = b.registerFilled(t, 4096, mem.AccessRemoteRead, 9)
	})
	sink, dbuf, _ := a.register(t, 4096, mem.AccessLocalWrite)
	w := make(chan CQE, 1)
	for i := range 200 {
		off := uint64(i % 64 * 64)
		clear(dbuf[off : off+64])
		wr := SendWR{ID: uint64(i), Op: OpRead, SGL: []SGE{{Region: sink, Off: off, Len: 64}},
			RemoteSTag: uint32(src.STag()), RemoteTO: src.Base() + off, Waiter: w}
		if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		c, err := a.qp.Await(context.Background(), w, true)
		if err != nil || c.Status != StatusSuccess || c.ID != uint64(i) {
			t.Fatalf("read %d: %v %+v", i, err, c)
		}
		a.qp.ReleaseWaited(&c)
		if !bytes.Equal(dbuf[off:off+64], sbuf[off:off+64]) {
			t.Fatalf("read %d placed the wrong bytes", i)
		}
	}
	if a.qp.stats.FPDUsByWaiters.Load() == 0 {
		t.Fatal("no Read Response was handled by its waiter")
	}
}

// sharedSide is rawSide with one CQ for sends and receives.
func sharedSide(t *testing.T, o pairOpts) (*side, *rawPeer) {
	t.Helper()
	ca, cb := tcpPair(t)
	s := &side{table: mem.NewTable(mem.TableOptions{}), pd: 7, nc: ca}
	s.scq = NewCQ(64, nil) // room for a second QP's queues
	s.rcq = s.scq
	qp, err := New(Config{Table: s.table, PD: s.pd, SendCQ: s.scq, RecvCQ: s.rcq,
		SQDepth: 16, RQDepth: 16, MaxSGE: 2, MaxInline: 64, DrainTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.qp = qp
	s.params = Params{IRD: 1, ORD: 1}
	s.start(t, o)
	t.Cleanup(func() { _ = s.qp.Close(); cb.Close() })
	return s, &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{CRC: o.crc})}
}

// borrowedShared returns a QP (with a raw peer) with one CQ for sends and
// receives, whose receive goroutine lent its role, a 64-byte region r, and
// a goroutine waiting on the CQ that borrowed the role.
func borrowedShared(t *testing.T) (a *side, peer *rawPeer, r *mem.Region, ch <-chan waitResult) {
	t.Helper()
	a, peer = sharedSide(t, pairOpts{crc: true})
	r, _, _ = a.register(t, 64, mem.AccessLocalWrite|mem.AccessRemoteWrite)
	lend(t, a, peer, r, 1, 1)
	ch = asyncWait(context.Background(), a.scq)
	waitBorrowed(t, a.qp)
	return a, peer, r, ch
}

// TestBorrowerWokenBySendCompletion: a waiter reading the socket for a CQ
// that also gets send completions returns when one arrives, though the
// peer sends nothing.
func TestBorrowerWokenBySendCompletion(t *testing.T) {
	a, peer, r, ch := borrowedShared(t)
	if _, err := a.qp.PostSend([]SendWR{{ID: 7, Op: OpWrite, Flags: Signaled, SGL: []SGE{{Region: r, Len: 8}}, RemoteSTag: 1, RemoteTO: 0}}); err != nil {
		t.Fatal(err)
	}
	recvResult(t, ch).check(t, 7)
	if u := peer.readULPDU(t); len(u) != 14+8 {
		t.Fatalf("the Write: % x", u)
	}
}

// TestBorrowerContextEnds: a waiter reading the socket returns when its
// context ends, and leaves the stream intact: the next Send is received,
// by a waiter with another context.
func TestBorrowerContextEnds(t *testing.T) {
	o := pairOpts{crc: true}
	var r *mem.Region
	var buf []byte
	a, peer := rawSide(t, o, func(a *side) { r, buf, _ = a.register(t, 64, mem.AccessLocalWrite) })
	lend(t, a, peer, r, 1, 1)
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		ch := asyncWait(ctx, a.rcq)
		waitBorrowed(t, a.qp)
		cancel()
		if res := recvResult(t, ch); !errors.Is(res.err, context.Canceled) {
			t.Fatalf("round %d: wait returned %v, want context.Canceled", i, res.err)
		}
	}
	if _, err := a.qp.PostRecv([]RecvWR{{ID: 3, SGL: []SGE{{Region: r, Len: 64}}}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch := asyncWait(ctx, a.rcq)
	waitBorrowed(t, a.qp)
	peer.send(t, cat(untagged(3, true, 0, 0, 3, 0), []byte("after")))
	if c := recvResult(t, ch).check(t, 3); c.Status != StatusSuccess || string(buf[:5]) != "after" {
		t.Fatalf("completion %+v (%v)", c, c.Err)
	}
	if err := a.qp.Err(); err != nil {
		t.Fatalf("the QP failed: %v", err)
	}
}

// TestBorrowerCloseFlushes: closing the QP while a waiter reads its socket
// flushes the waiter's receive and ends the receive goroutine.
func TestBorrowerCloseFlushes(t *testing.T) {
	a, _, _, ch := borrowedRecv(t)
	if err := a.qp.Close(); err != nil {
		t.Fatal(err)
	}
	if c := recvResult(t, ch).check(t, 3); c.Status != StatusFlushed {
		t.Fatalf("completion %+v, want flushed", c)
	}
	<-a.qp.Done()
}

// TestBorrowerTerminate: a violation found by a waiter is reported with
// the Terminate the spec prescribes, and the QP is torn down.
func TestBorrowerTerminate(t *testing.T) {
	a, peer, _, ch := borrowedRecv(t)
	bad := cat(tagged(0, true, 0x12345600, 0), []byte("nowhere"))
	peer.send(t, bad)
	got, _ := peer.readUntilTerminate(t)
	assertTerminate(t, got, wire.TermDDPInvalidSTag, bad, 14, false)
	if c := recvResult(t, ch).check(t, 3); c.Status != StatusFlushed {
		t.Fatalf("completion %+v, want flushed", c)
	}
	<-a.qp.Done()
	var te *TerminateError
	if !errors.As(a.qp.Err(), &te) || !te.Sent || te.Code != wire.TermDDPInvalidSTag {
		t.Fatalf("QP error %v", a.qp.Err())
	}
}

// fpduOf returns the octets of one FPDU carrying ulpdu, as the framing
// layer writes them.
func fpduOf(t *testing.T, ulpdu []byte, crc bool) []byte {
	t.Helper()
	x, y := tcpPair(t)
	defer x.Close()
	defer y.Close()
	if err := fpdu.NewConn(x, fpdu.Options{CRC: crc}).Writer().WriteFPDU(ulpdu); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fpdu.HeaderLen+len(ulpdu)+fpdu.PadLen(len(ulpdu))+fpdu.CRCLen)
	if _, err := io.ReadFull(y, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBorrowerHandsPartialFPDUBack: a waiter that finds only part of an
// FPDU gives the role back (reading the rest could block where nothing can
// interrupt it); the receive goroutine completes the message.
func TestBorrowerHandsPartialFPDUBack(t *testing.T) {
	a, peer, buf, ch := borrowedRecv(t)
	before := a.qp.stats.FPDUsByWaiters.Load()
	msg := []byte("split in two segments")
	f := fpduOf(t, cat(untagged(3, true, 0, 0, 3, 0), msg), true)
	if _, err := peer.nc.Write(f[:10]); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the role went back to the receive goroutine", func() bool { return a.qp.role.state.Load() == roleLoop })
	if _, err := peer.nc.Write(f[10:]); err != nil {
		t.Fatal(err)
	}
	if c := recvResult(t, ch).check(t, 3); c.Len != uint32(len(msg)) || !bytes.Equal(buf[:len(msg)], msg) {
		t.Fatalf("completion %+v, data %q", c, buf[:len(msg)])
	}
	if got := a.qp.stats.FPDUsByWaiters.Load() - before; got != 0 {
		t.Fatalf("a waiter handled %d FPDUs it did not have whole", got)
	}
}

// TestReceiveResumesWithoutWaiters: after the last waiter left, the receive
// goroutine takes its role back and answers the peer's Read Request
// although nobody waits.
func TestReceiveResumesWithoutWaiters(t *testing.T) {
	o := pairOpts{crc: true, ird: 1}
	var r, src *mem.Region
	a, peer := rawSide(t, o, func(a *side) {
		r, _, _ = a.register(t, 64, mem.AccessLocalWrite)
		src, _, _ = a.registerFilled(t, 64, mem.AccessRemoteRead, 4)
	})
	lend(t, a, peer, r, 1, 1)
	peer.send(t, cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(9, 0x77, 16, uint32(src.STag()), src.Base())))
	u := peer.readULPDU(t)
	if len(u) != 14+16 || u[1]&0x0f != 2 {
		t.Fatalf("the Read Response: % x", u)
	}
	if a.qp.role.state.Load() != roleLoop {
		t.Fatal("the receive goroutine answered without its role")
	}
}

// TestBulkStreamKeepsTheRole: while the peer streams 1 MiB Writes, the
// receive goroutine keeps its role although a goroutine waits on the CQ:
// lending it would only have the waiter hand every large FPDU back (each
// message ends with a short segment, which alone must not make it lend).
func TestBulkStreamKeepsTheRole(t *testing.T) {
	o := pairOpts{crc: true, depth: 32}
	const size, count = 1 << 20, 40
	var dst *mem.Region
	var note *mem.Region
	a, b, _ := startedPair(t, o, func(a, b *side) {
		dst, _, _ = b.register(t, size, mem.AccessRemoteWrite)
		note, _, _ = b.register(t, 64, mem.AccessLocalWrite)
	})
	src, _, _ := a.registerFilled(t, size, 0, 3)
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: note, Len: 64}}}}); err != nil {
		t.Fatal(err)
	}
	ch := asyncWait(context.Background(), b.rcq)
	eventually(t, "the waiter is counted", func() bool { return b.qp.role.wanted.Load() > 0 })
	for i := range count {
		wr := SendWR{ID: uint64(i), Op: OpWrite, SGL: []SGE{{Region: src, Len: size}}, RemoteSTag: uint32(dst.STag()), RemoteTO: dst.Base()}
		if i%8 == 7 {
			wr.Flags = Signaled
		}
		if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		if i%8 == 7 {
			if c := waitCQE(t, a.scq); c.Status != StatusSuccess {
				t.Fatalf("write %d: %+v", i, c)
			}
		}
	}
	if _, err := a.qp.PostSend([]SendWR{{ID: 99, Op: OpSend, Flags: Signaled}}); err != nil {
		t.Fatal(err)
	}
	recvResult(t, ch).check(t, 1)
	if p := b.qp.role.partials.Load(); p > 2 {
		t.Fatalf("the role was lent and handed back %d times during the stream", p)
	}
}

// Regressions found in review.

// TestBorrowerWokenByCQClose: closing the CQ wakes a waiter reading the
// socket for it.
func TestBorrowerWokenByCQClose(t *testing.T) {
	a, _, _, ch := borrowedRecv(t)
	a.rcq.Close()
	if res := recvResult(t, ch); !errors.Is(res.err, ErrCQClosed) {
		t.Fatalf("wait returned %v, want ErrCQClosed", res.err)
	}
}

// secondQP creates another (unstarted) QP on s's CQs.
func secondQP(t *testing.T, s *side) *QP {
	t.Helper()
	qp, err := New(Config{Table: s.table, PD: s.pd, SendCQ: s.scq, RecvCQ: s.rcq,
		SQDepth: 4, RQDepth: 4, MaxSGE: 2, MaxInline: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qp.Close() })
	return qp
}

// TestBorrowerStopsWhenCQBecomesShared: once a second QP completes to the
// CQ, a waiter that was reading the first QP's socket stops, and a
// completion of the second QP (a flushed receive) wakes it.
func TestBorrowerStopsWhenCQBecomesShared(t *testing.T) {
	a, _, r, ch := borrowedShared(t)
	qp2 := secondQP(t, a)
	eventually(t, "the waiter stopped reading", func() bool { return a.qp.role.state.Load() != roleBorrowed })
	if _, err := qp2.PostRecv([]RecvWR{{ID: 42, SGL: []SGE{{Region: r, Len: 8}}}}); err != nil {
		t.Fatal(err)
	}
	go qp2.Close() // flushes receive 42 into the shared CQ
	if c := recvResult(t, ch).check(t, 42); c.Status != StatusFlushed {
		t.Fatalf("completion %+v", c)
	}
}

// TestSharedCQWaiterDoesNotStallReceive: a waiter counted on a QP whose CQ
// then became shared no longer counts, and the receive goroutine keeps
// reading: the QP's Send reaches the waiter.
func TestSharedCQWaiterDoesNotStallReceive(t *testing.T) {
	o := pairOpts{crc: true}
	a, peer := sharedSide(t, o)
	r, buf, _ := a.register(t, 64, mem.AccessLocalWrite|mem.AccessRemoteWrite)
	ch := asyncWait(context.Background(), a.rcq)
	eventually(t, "the waiter is counted", func() bool { return a.qp.role.wanted.Load() == 1 })
	secondQP(t, a)     // a server's next connection, not started yet
	for i := range 2 { // two small Writes: the receive goroutine may lend
		peer.send(t, cat(tagged(0, true, uint32(r.STag()), r.Base()+uint64(i)), []byte("w")))
	}
	if _, err := a.qp.PostRecv([]RecvWR{{ID: 5, SGL: []SGE{{Region: r, Len: 64}}}}); err != nil {
		t.Fatal(err)
	}
	peer.send(t, cat(untagged(3, true, 0, 0, 1, 0), []byte("hello")))
	if c := recvResult(t, ch).check(t, 5); c.Status != StatusSuccess || string(buf[:5]) != "hello" {
		t.Fatalf("completion %+v, data %q", c, buf[:5])
	}
}

// TestInterruptBeforeWaitLeavesNoDeadline: an interruption that comes
// after a borrower announced its wait but before it waited (it found what
// it waits for and stops) leaves no read deadline behind: the receive
// goroutine, taking the role back, reads the next FPDU normally.
func TestInterruptBeforeWaitLeavesNoDeadline(t *testing.T) {
	a, peer, _, ch := borrowedRecv(t)
	ro := &a.qp.role
	// The waiter returns (a Send arrives), and borrows again for a wait
	// on a context that has ended; the interruption races with its
	// look at the context.
	peer.send(t, cat(untagged(3, true, 0, 0, 3, 0), []byte("one")))
	recvResult(t, ch).check(t, 3)
	eventually(t, "the role is free", func() bool { return ro.state.CompareAndSwap(roleFree, roleBorrowed) })
	ro.polling.Store(true)
	a.qp.interruptPoll() // sets a read deadline in the past
	a.qp.endPoll()       // what borrowRx does when it stops before Fill
	a.qp.giveBackRx(nil)
	r, _, _ := a.register(t, 64, mem.AccessLocalWrite)
	if _, err := a.qp.PostRecv([]RecvWR{{ID: 4, SGL: []SGE{{Region: r, Len: 64}}}}); err != nil {
		t.Fatal(err)
	}
	peer.send(t, cat(untagged(3, true, 0, 0, 4, 0), []byte("two")))
	if c := waitCQEPoll(t, a.rcq); c.ID != 4 || c.Status != StatusSuccess {
		t.Fatalf("completion %+v (%v)", c, c.Err)
	}
	if err := a.qp.Err(); err != nil {
		t.Fatalf("the QP failed: %v", err)
	}
}

// waitCQEPoll polls cq (without waiting on it, so without borrowing).
func waitCQEPoll(t *testing.T, cq *CQ) CQE {
	t.Helper()
	var out [1]CQE
	eventually(t, "a completion", func() bool { return cq.Poll(out[:]) == 1 })
	return out[0]
}
