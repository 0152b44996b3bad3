package verbs

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Completions that wait for an invalidation to drain (complete.go: a Local
// Invalidate WR, a Send with Invalidate) when the pin or lease they wait
// for belongs to another QP of the same table: here B sends a 32 MiB Read
// Response of x to a peer that reads nothing, so B leases x indefinitely.

// sharedLease returns A (with its scripted peer) and B on one table, and
// x, a region of that table that B holds a lease on for as long as B's
// peer reads nothing.
func sharedLease(t *testing.T) (a *end, pa *peer, b *end, x *mem.Region) {
	t.Helper()
	table := mem.NewTable(mem.TableOptions{})
	o := defaultOpts()
	o.table = table
	a, pa = scripted(t, o)
	b, pb := scripted(t, o)
	x = peerReadsBig(t, b, pb, mem.AccessRemoteRead|mem.AccessRemoteInvalidate)
	return a, pa, b, x
}

// sendInvalidateX makes A's peer send a Send with Invalidate naming x and
// waits until A processed it (its completion waits for x's drain).
func sendInvalidateX(t *testing.T, a *end, pa *peer, x *mem.Region) {
	t.Helper()
	pa.sendMsg(wire.OpSendInv, uint32(x.STag()), []byte("inv"))
	eventually(t, "received", func() bool { return a.qp.Stats().FPDUsReceived > 0 })
	if s := a.qp.State(); s != rdma.StateRTS {
		t.Fatalf("A left RTS (%v): %v", s, a.qp.Err())
	}
	if x.Valid() {
		t.Fatal("x still valid after the Send with Invalidate was processed")
	}
}

// TestReview2CloseReturnsBeforeDeferredCompletions: Close of A returns,
// and Done closes, with A's work requests not completed: the Local
// Invalidate (and every WR behind it) or the received Send with
// Invalidate wait for B's lease, and come whenever B lets go, after A
// gave its CQ reservations back. Close's contract is that every
// outstanding work request has completed when it returns (and Done's,
// that every WR was flushed); nothing bounds when these do.
func TestReview2CloseReturnsBeforeDeferredCompletions(t *testing.T) {
	for _, side := range []string{"local-invalidate", "send-with-invalidate"} {
		t.Run(side, func(t *testing.T) {
			a, pa, b, x := sharedLease(t)
			switch side {
			case "local-invalidate":
				a.post(t,
					rdmap.SendWR{ID: 1, Op: rdma.OpLocalInvalidate, Flags: rdma.Signaled, InvalidateSTag: uint32(x.STag())},
					rdmap.SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Signaled})
			case "send-with-invalidate":
				postRecv64(t, a, 1)
				postRecv64(t, a, 2)
				sendInvalidateX(t, a, pa, x)
			}
			a.closeWithin(t)
			select {
			case <-a.qp.Done():
			default:
				t.Fatal("Close returned before Done closed")
			}
			got := map[uint64]bool{}
			var out [4]CQE
			for _, c := range out[:a.cq.Poll(out[:])] {
				got[c.ID] = true
			}
			if !got[1] || !got[2] {
				t.Errorf("Close and Done returned with completions %v of A's work requests 1 and 2; the rest wait for B's lease on x", got)
			}
			b.closeWithin(t) // B's lease ends: A's completions come now
		})
	}
	noLeaks(t)
}

// TestReview2FlushOvertakesDeferredReceive: receive completions must come
// in the order their receives were consumed. A's peer sends a Send with
// Invalidate into receive 1 (its completion waits for x's drain) and A is
// closed: the shell's finishLocked flushes receive 2 from the QP's own
// ring straight into the CQ, ahead of receive 1, which the Core still
// holds back; receive 1 then completes after it.
func TestReview2FlushOvertakesDeferredReceive(t *testing.T) {
	a, pa, b, x := sharedLease(t)
	postRecv64(t, a, 1)
	postRecv64(t, a, 2)
	sendInvalidateX(t, a, pa, x)
	a.closeWithin(t)
	b.closeWithin(t) // B's lease ends: receive 1's completion may come
	first := a.next(t)
	second := a.next(t)
	if first.ID != 1 || second.ID != 2 {
		t.Errorf("receive completions in order %d (%v), %d (%v): want 1 then 2 (flushed)",
			first.ID, first.Status, second.ID, second.Status)
	}
	// Receive 1 succeeded (x invalidated) if its drain came before the
	// Close, or is flushed if the Close stopped waiting for it (Close does
	// not wait for another QP's lease): either way it comes first.
	if ok := first.Status == rdma.StatusFlushed || (first.Status == rdma.StatusSuccess && first.Invalidated != 0); first.ID == 1 && !ok {
		t.Errorf("receive 1: %+v, want success with x invalidated, or flushed", first.Completion)
	}
	noLeaks(t)
}
