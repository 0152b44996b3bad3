package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
)

// TestFenceWaitsForReads: a fenced WR is not transmitted until every
// earlier Read has completed (RFC 5040 §5.5); an unfenced one is.
func TestFenceWaitsForReads(t *testing.T) {
	o := pairOpts{crc: true, ord: 2}
	var sink *mem.Region
	a, peer := rawSide(t, o, func(a *side) { sink, _, _ = a.register(t, 64, mem.AccessLocalWrite) })
	if _, err := a.qp.PostSend([]SendWR{
		{ID: 1, Op: OpRead, Flags: Signaled, SGL: []SGE{{Region: sink, Len: 8}}, RemoteSTag: 9},
		{ID: 2, Op: OpSend, Flags: Signaled | Fence},
	}); err != nil {
		t.Fatal(err)
	}
	rr := peer.readULPDU(t)
	if rr[1]&0x0f != 1 {
		t.Fatalf("first FPDU % x is not the Read Request", rr[:2])
	}
	// Nothing else may arrive while the Read is outstanding.
	_ = peer.nc.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	if _, err := peer.fc.Reader().Next(); err == nil {
		t.Fatal("the fenced Send was transmitted before the Read completed")
	}
	// Answer the Read; the fenced Send follows.
	peer.send(t, cat(tagged(2, true, be32at(rr, 18), be64at(rr, 22)), make([]byte, 8)))
	s := peer.readULPDU(t)
	if s[1]&0x0f != 3 {
		t.Fatalf("expected the Send after the Read, got % x", s[:2])
	}
	for _, id := range []uint64{1, 2} {
		if c := waitCQE(t, a.scq); c.ID != id || c.Status != StatusSuccess {
			t.Fatalf("completion %+v", c)
		}
	}
}

// TestUnsignaledLastSlot: the last free send-queue slot takes only a
// signaled WR, so a queue of unsignaled WRs cannot wedge silently.
func TestUnsignaledLastSlot(t *testing.T) {
	o := pairOpts{crc: true, depth: 3}
	var dst *mem.Region
	a, _, _ := startedPair(t, o, func(a, b *side) { dst, _, _ = b.register(t, 8, mem.AccessRemoteWrite) })
	w := SendWR{Op: OpWrite, RemoteSTag: uint32(dst.STag()), RemoteTO: dst.Base()}
	if _, err := a.qp.PostSend([]SendWR{w, w}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]SendWR{w}); !errors.Is(err, ErrSQNeedsSignaled) {
		t.Fatalf("an unsignaled WR took the last slot: %v", err)
	}
	w.Flags = Signaled
	if _, err := a.qp.PostSend([]SendWR{w}); err != nil {
		t.Fatal(err)
	}
	waitCQE(t, a.scq) // frees all three slots
	w.Flags = 0
	if _, err := a.qp.PostSend([]SendWR{w, w}); err != nil {
		t.Fatalf("slots not freed: %v", err)
	}
}
