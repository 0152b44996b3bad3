//go:build linux && !iwarp_portable

package verbs

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// review5Ctx returns the context of the i-th wait of a stress round: most
// are long, some ended before the wait, some end while the waiter makes
// its first reads or has just parked.
func review5Ctx(i int) (context.Context, context.CancelFunc, bool) {
	switch i % 5 {
	case 0:
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel, false
	case 1:
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*10*time.Microsecond)
		return ctx, cancel, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	return ctx, cancel, true
}

// review5Probe checks that a's socket is left armed with its receive token
// free: with nobody waiting, a Send of b's is read by a's poller (only
// Poll looks at the CQ: no waiter reads). A round that left the
// registration disarmed, or spent, with the token free strands the Send's
// octets in the socket.
func review5Probe(t *testing.T, a, b *end, round int) {
	t.Helper()
	eventually(t, "the receive token free", func() bool { return !a.qp.rxTok.Load() })
	a.postRecv(t, rdmap.RecvWR{ID: 1 << 40})
	b.post(t, rdmap.SendWR{ID: 1 << 40, Op: rdma.OpSend})
	var out [1]CQE
	deadline := time.Now().Add(bound)
	for {
		if a.cq.Poll(out[:]) == 1 {
			if out[0].ID != 1<<40 || out[0].Status != rdma.StatusSuccess {
				t.Fatalf("round %d: probe completion %+v", round, out[0].Completion)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d: the probe's Send was not read by a's poller (%d octets in the socket, token %v, state %v, %v)",
				round, socketQueued(t, a), a.qp.rxTok.Load(), a.qp.State(), a.qp.Err())
		}
		time.Sleep(0) // a poll loop, not a wait for an event: Poll has no notification
	}
}

// TestReview5WaitersLeaveTheSocketArmed: rounds of goroutines issuing
// Reads with Do (each waits reading the socket itself when it gets the
// receive token), with contexts that end before the wait, during the
// first reads or after the park, and one goroutine waiting on the CQ for
// the peer's Sends the same ways; after each round a probe checks that
// the poller still reads the socket. Every wait with a long context must
// end with its completion (no lost wake-up).
func TestReview5WaitersLeaveTheSocketArmed(t *testing.T) {
	rounds := 60
	if raceEnabled {
		rounds = 15
	}
	const (
		readers = 3
		each    = 20
		sends   = 40
		burst   = 8
	)
	o := defaultOpts()
	o.cqCapacity = 256
	o.rq = 128
	a, b := pair(t, o, o)
	word := b.register(t, make([]byte, 4096), mem.AccessRemoteRead)
	sinks := make([]*mem.Region, readers)
	for i := range sinks {
		sinks[i] = a.register(t, make([]byte, 4096), mem.AccessLocalWrite)
	}
	for r := range rounds {
		var wg sync.WaitGroup
		for g := range readers {
			wg.Go(func() {
				for i := range each {
					ctx, cancel, long := review5Ctx(g + i)
					size := uint32(8 + (r*31+i*97)%4000)
					c, err := a.qp.Do(ctx, remote(rdmap.SendWR{Op: rdma.OpRead, SGL: []rdma.SGE{{STag: uint32(sinks[g].STag()), Length: size}}}, word, 0))
					cancel()
					if long && (err != nil || c.Status != rdma.StatusSuccess) {
						t.Errorf("round %d: reader %d: Read %d: %v %v (state %v, %v)", r, g, i, c.Status, err, a.qp.State(), a.qp.Err())
						return
					}
				}
			})
		}
		for i := range sends {
			a.postRecv(t, rdmap.RecvWR{ID: uint64(i)})
		}
		wg.Go(func() {
			got := 0
			var out [4]CQE
			for i := 0; got < sends; i++ {
				if k := a.cq.Poll(out[:]); k > 0 {
					got += k
					continue
				}
				ctx, cancel, long := review5Ctx(i)
				err := a.cq.Wait(ctx)
				cancel()
				if long && err != nil {
					t.Errorf("round %d: CQ.Wait after %d of %d receives: %v", r, got, sends, err)
					return
				}
			}
		})
		// b's Sends go in bursts: a's waiter on the CQ finds most of its
		// completions readable when it takes the token, and leaves
		// without parking while the poller's Ready for the same octets
		// finds the token taken (rxMissed).
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			for i := 0; i < sends; i += burst {
				var wrs [burst]rdmap.SendWR
				for j := range wrs {
					wrs[j] = rdmap.SendWR{ID: uint64(i + j), Op: rdma.OpSend, Flags: rdma.Signaled}
				}
				if n, err := b.qp.PostSend(wrs[:]); err != nil || n != burst {
					t.Errorf("round %d: b's Sends from %d: %d posted: %v", r, i, n, err)
					return
				}
				for done := 0; done < burst; {
					var out [burst]CQE
					k := b.cq.Poll(out[:])
					for _, c := range out[:k] {
						if c.Status != rdma.StatusSuccess {
							t.Errorf("round %d: b's Send: %+v", r, c.Completion)
						}
					}
					done += k
					if k == 0 {
						if err := b.cq.Wait(ctx); err != nil {
							t.Errorf("round %d: b's CQ.Wait: %v", r, err)
							return
						}
					}
				}
			}
		})
		wg.Wait()
		if t.Failed() {
			return
		}
		review5Probe(t, a, b, r)
	}
}
