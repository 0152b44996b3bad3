package iwarp_test

// One test per rule of docs/semantics.md, named after the rule.

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Rule 1: with Inline the payload is copied at post time; the buffer may be
// reused as soon as PostSend returns.
func TestSemanticsInlineBufferFreeAtOnce(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	rbuf := make([]byte, 32)
	rmr, _ := b.pd.RegisterMemory(rbuf, iwarp.AccessLocalWrite)
	if err := b.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{rmr.SGE(0, 32)}}); err != nil {
		t.Fatal(err)
	}
	sbuf := []byte("inline payload, copied at post!!")
	smr, _ := a.pd.RegisterMemory(sbuf, 0)
	if err := a.qp.PostSend(iwarp.SendWR{ID: 2, Op: iwarp.OpSend, Flags: iwarp.Inline | iwarp.Signaled, SGL: []iwarp.SGE{smr.SGE(0, 32)}}); err != nil {
		t.Fatal(err)
	}
	copy(sbuf, "overwritten right after PostSend") // allowed by the rule
	if c, err := b.cq.Next(ctx); err != nil || c.Status != iwarp.StatusSuccess {
		t.Fatalf("%+v %v", c, err)
	}
	if string(rbuf) != "inline payload, copied at post!!" {
		t.Fatalf("received %q", rbuf)
	}
}

// Rule 2: a one-sided Write is visible to the target application once it
// has a completion of a later message on the same connection (here a Send
// after the Write). The race detector checks the ordering.
func TestSemanticsWriteVisibleAfterLaterCompletion(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	target := make([]byte, 1<<16)
	tmr, _ := b.pd.RegisterMemory(target, iwarp.AccessRemoteWrite)
	note, _ := b.pd.RegisterMemory(make([]byte, 1), iwarp.AccessLocalWrite)
	if err := b.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{note.SGE(0, 0)}}); err != nil {
		t.Fatal(err)
	}
	src := bytes.Repeat([]byte{0xAB}, len(target))
	smr, _ := a.pd.RegisterMemory(src, 0)
	if err := a.qp.PostSend(
		iwarp.SendWR{ID: 1, Op: iwarp.OpWrite, SGL: []iwarp.SGE{smr.SGE(0, len(src))}, Remote: tmr.Remote()},
		iwarp.SendWR{ID: 2, Op: iwarp.OpSend},
	); err != nil {
		t.Fatal(err)
	}
	if c, err := b.cq.Next(ctx); err != nil || c.Status != iwarp.StatusSuccess {
		t.Fatalf("%+v %v", c, err)
	}
	if !bytes.Equal(target, src) {
		t.Fatal("the Write is not visible after the later Send completed")
	}
}

// Rule 2b: memory a peer reads must be written before it is registered
// (or before another synchronisation with the QP): the bytes read back are
// the ones written before registration.
func TestSemanticsReadSourceWrittenBeforeRegistration(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	src := bytes.Repeat([]byte("abc"), 1000)
	smr, _ := b.pd.RegisterMemory(src, iwarp.AccessRemoteRead)
	sink := make([]byte, len(src))
	kmr, _ := a.pd.RegisterMemory(sink, iwarp.AccessLocalWrite)
	if err := a.qp.Read(ctx, smr.Remote(), kmr.SGE(0, len(sink))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sink, src) {
		t.Fatal("read bytes differ")
	}
}

// Rule 3: a send-side completion means "handed to TCP", not "placed": a
// Write the peer rejects still completes successfully; the rejection
// arrives afterwards as the peer's Terminate.
func TestSemanticsSendCompletionIsLocal(t *testing.T) {
	a, _ := connectPair(t, nil, nil)
	ctx := ctx10(t)
	smr, _ := a.pd.RegisterMemory(make([]byte, 64), 0)
	bogus := iwarp.RemoteBuffer{STag: 0xdead00, TO: 0, Len: 64}
	if err := a.qp.Write(ctx, bogus, smr.SGE(0, 64)); err != nil {
		t.Fatalf("the Write completed with %v; on iWARP it completes when handed to TCP", err)
	}
	wantTerminated(t, ctx, a, false, iwarp.TermDDPInvalidSTag)
}

// Rule 3b: the idiom for remote completion: a Read after Writes completes
// only after the peer processed the Writes (RFC 5040 §5.5), so a
// successful Read proves the earlier Writes were placed.
func TestSemanticsReadAfterWriteProvesPlacement(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	target := make([]byte, 4096)
	tmr, _ := b.pd.RegisterMemory(target, iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead)
	src := bytes.Repeat([]byte{7}, 4096)
	smr, _ := a.pd.RegisterMemory(src, 0)
	back := make([]byte, 4096)
	kmr, _ := a.pd.RegisterMemory(back, iwarp.AccessLocalWrite)
	if err := a.qp.PostSend(iwarp.SendWR{ID: 1, Op: iwarp.OpWrite, SGL: []iwarp.SGE{smr.SGE(0, 4096)}, Remote: tmr.Remote()}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Read(ctx, tmr.Remote(), kmr.SGE(0, 4096)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, src) {
		t.Fatal("the Read did not see the earlier Write")
	}
}

// Rule 4: a Send that finds no posted receive is fatal (iWARP has no
// receiver-not-ready retry): Terminate DDP/2/0x02 and both QPs torn down.
func TestSemanticsSendWithoutReceiveIsFatal(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	if err := a.qp.Send(ctx); err != nil {
		t.Fatal(err)
	}
	wantTerminated(t, ctx, b, true, iwarp.TermDDPNoBuffer)
	wantTerminated(t, ctx, a, false, iwarp.TermDDPNoBuffer)
}

// Rule 5: a blocking call whose context ends returns ctx's error at once;
// the work request stays in flight and its buffer belongs to the QP until
// the QP completes it or is done.
func TestSemanticsCancelLeavesWRInFlight(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	// The peer's QP stops reading: close its receive side abruptly by
	// not draining... simplest: a Read the peer cannot answer quickly is
	// a large one; cancel right away.
	big := make([]byte, 64<<20)
	src, _ := b.pd.RegisterMemory(big, iwarp.AccessRemoteRead)
	sink, _ := a.pd.RegisterMemory(make([]byte, len(big)), iwarp.AccessLocalWrite)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := a.qp.Read(ctx, src.Remote(), sink.SGE(0, len(big)))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	// A later operation's completion proves the Read completed first.
	if err := a.qp.Read(ctx10(t), src.Remote(), sink.SGE(0, 1)); err != nil {
		t.Fatal(err)
	}
}

// Rule 6: deregistration racing an incoming Write neither hangs nor returns
// while bytes can still land: after Deregister returns the buffer never
// changes again, and later segments are refused (invalid STag).
func TestSemanticsDeregisterDuringPlacement(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	target := make([]byte, 32<<20)
	tmr, _ := b.pd.RegisterMemory(target, iwarp.AccessRemoteWrite)
	src := bytes.Repeat([]byte{1}, len(target))
	smr, _ := a.pd.RegisterMemory(src, 0)
	for i := 0; i < 4; i++ {
		if err := a.qp.PostSend(iwarp.SendWR{ID: uint64(i), Op: iwarp.OpWrite, SGL: []iwarp.SGE{smr.SGE(0, len(src))}, Remote: tmr.Remote()}); err != nil {
			break // the QP may already be terminated
		}
	}
	time.Sleep(5 * time.Millisecond)
	if err := tmr.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	snap := append([]byte(nil), target...)
	select {
	case <-b.qp.Done():
	case <-ctx.Done():
		t.Fatal("the target QP was not terminated")
	}
	if !bytes.Equal(snap, target) {
		t.Fatal("bytes landed after Deregister returned")
	}
	var te *iwarp.TerminateError
	if !errors.As(b.qp.Err(), &te) || te.Code != iwarp.TermDDPInvalidSTag {
		t.Fatalf("target error %v", b.qp.Err())
	}
}

// Rule 7: a CQ never overruns: a QP whose queues do not fit in its CQs is
// refused, and a work request's slot is free again only once its
// completion was polled.
func TestSemanticsCQCapacity(t *testing.T) {
	dev := iwarp.NewDevice(nil)
	pd, _ := dev.AllocPD()
	cq, _ := dev.NewCQ(8, nil)
	if _, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 8, RecvQueueDepth: 1}); !errors.Is(err, iwarp.ErrCQCapacity) {
		t.Fatalf("QP with 9 slots on an 8-entry CQ: %v", err)
	}
	a, b := connectPairDepth(t, 2)
	ctx := ctx10(t)
	mr, _ := a.pd.RegisterMemory(make([]byte, 8), 0)
	rmr, _ := b.pd.RegisterMemory(make([]byte, 8), iwarp.AccessRemoteWrite)
	wr := iwarp.SendWR{Op: iwarp.OpWrite, Flags: iwarp.Signaled, SGL: []iwarp.SGE{mr.SGE(0, 8)}, Remote: rmr.Remote()}
	if err := a.qp.PostSend(wr, wr); err != nil {
		t.Fatal(err)
	}
	for a.cq.Len() < 2 {
		_ = a.cq.Wait(ctx)
		time.Sleep(time.Millisecond)
	}
	if err := a.qp.PostSend(wr); !errors.Is(err, iwarp.ErrQueueFull) {
		t.Fatalf("posting with every slot awaiting a poll: %v", err)
	}
	var out [1]iwarp.Completion
	if a.cq.Poll(out[:]) != 1 {
		t.Fatal("no completion")
	}
	if err := a.qp.PostSend(wr); err != nil {
		t.Fatalf("after polling one completion: %v", err)
	}
}

// Rule 8: an unsignaled WR's slot is freed by the completion of a later
// signaled WR.
func TestSemanticsUnsignaledSlots(t *testing.T) {
	a, b := connectPairDepth(t, 3)
	ctx := ctx10(t)
	mr, _ := a.pd.RegisterMemory(make([]byte, 8), 0)
	rmr, _ := b.pd.RegisterMemory(make([]byte, 8), iwarp.AccessRemoteWrite)
	un := iwarp.SendWR{Op: iwarp.OpWrite, SGL: []iwarp.SGE{mr.SGE(0, 8)}, Remote: rmr.Remote()}
	sig := un
	sig.Flags = iwarp.Signaled
	if err := a.qp.PostSend(un, un, sig); err != nil {
		t.Fatal(err)
	}
	if _, err := a.cq.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(un, un, sig); err != nil {
		t.Fatalf("the signaled completion did not free the unsignaled slots: %v", err)
	}
}

func connectPairDepth(t *testing.T, depth int) (*endpoint, *endpoint) {
	t.Helper()
	mk := func() *endpoint {
		dev := iwarp.NewDevice(nil)
		pd, _ := dev.AllocPD()
		cq, _ := dev.NewCQ(2*depth, nil)
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: depth, RecvQueueDepth: depth})
		if err != nil {
			t.Fatal(err)
		}
		return &endpoint{dev: dev, pd: pd, cq: cq, qp: qp}
	}
	return connect(t, mk(), mk(), nil, nil)
}
