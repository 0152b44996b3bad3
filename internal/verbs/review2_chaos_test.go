package verbs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// ledger counts the completions of the work requests a test posted.
type ledger struct {
	mu     sync.Mutex
	posted map[uint64]bool
	done   map[uint64]int
}

func newLedger() *ledger { return &ledger{posted: map[uint64]bool{}, done: map[uint64]int{}} }

func (l *ledger) post(id uint64) {
	l.mu.Lock()
	l.posted[id] = true
	l.mu.Unlock()
}

func (l *ledger) complete(id uint64) {
	l.mu.Lock()
	l.done[id]++
	l.mu.Unlock()
}

// check reports every posted WR not completed exactly once, and every
// completion of a WR never posted.
func (l *ledger) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.posted {
		if n := l.done[id]; n != 1 {
			return fmt.Errorf("WR %#x completed %d times", id, n)
		}
	}
	for id := range l.done {
		if !l.posted[id] {
			return fmt.Errorf("a completion of WR %#x, never posted", id)
		}
	}
	return nil
}

// spin yields n times: a pseudo-random point in the other goroutines' run
// (no sleep, no clock).
func spin(n int) {
	for range n {
		runtime.Gosched()
	}
}

// TestReview2ChaosTeardown: posters, a Do caller, a receive poster and a CQ
// consumer run on A while a random teardown hits at a random point: A's
// Close, A's Disconnect with a short context, the peer's Close, or the
// peer's Device.Close followed by its Close. Whatever happens, every
// Close returns within the bound, every work request posted completes
// exactly once, and no goroutine of the shell is left. In every mode.
func TestReview2ChaosTeardown(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(m.name)), 17))
			for round := range rounds {
				chaosRound(t, m.noPoll, m.pipe, rng.IntN(4), rng.IntN(4000))
				if t.Failed() {
					t.Fatalf("round %d", round)
				}
			}
		})
	}
	noLeaks(t)
}

func chaosRound(t *testing.T, noPoll, pipe bool, teardown, delay int) {
	o := modeOpts(noPoll, pipe)
	o.sq, o.rq, o.cqCapacity = 32, 32, 64
	a, b := pair(t, o, o)
	// Disjoint buffers for what may run at once: the application races
	// nothing, so the race detector sees the engine's races only.
	wtarget := b.register(t, make([]byte, 64<<10), mem.AccessRemoteWrite)
	rtarget := b.register(t, make([]byte, 8<<10), mem.AccessRemoteRead)
	rsgl := []rdma.SGE{{STag: uint32(b.register(t, make([]byte, 256), mem.AccessLocalWrite).STag()), Length: 256}}
	for i := range 32 {
		b.postRecv(t, rdmap.RecvWR{ID: uint64(i), SGL: rsgl})
	}
	bctx, bstop := context.WithCancel(context.Background())
	defer bstop()
	go func() { // b's application: consume
		var out [8]CQE
		for b.cq.Poll(out[:]) > 0 || b.cq.Wait(bctx) == nil {
		}
	}()
	src := a.register(t, make([]byte, 64<<10), 0)
	l := newLedger()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range 2 {
		sink := a.register(t, make([]byte, 4096), mem.AccessLocalWrite)
		wg.Go(func() {
			for i := uint64(0); ; i++ {
				id := uint64(p+1)<<32 | i
				var wr rdmap.SendWR
				switch i % 3 {
				case 0:
					wr = rdmap.SendWR{Op: rdma.OpSend, SGL: []rdma.SGE{{STag: uint32(src.STag()), Length: 64}}}
				case 1:
					wr = remote(rdmap.SendWR{Op: rdma.OpWrite, SGL: []rdma.SGE{{STag: uint32(src.STag()), Length: uint32(1 + i*977%(64<<10))}}}, wtarget, 0)
				default:
					wr = remote(rdmap.SendWR{Op: rdma.OpRead, SGL: []rdma.SGE{whole(sink)}}, rtarget, 4096)
				}
				wr.ID, wr.Flags = id, rdma.Signaled
				n, err := a.qp.PostSend([]rdmap.SendWR{wr})
				if n == 1 {
					l.post(id)
				}
				if err != nil && !isFull(err) {
					return // the QP left RTS
				}
				select {
				case <-stop:
					return
				default:
				}
				runtime.Gosched()
			}
		})
	}
	dsink := a.register(t, make([]byte, 64), mem.AccessLocalWrite)
	wg.Go(func() { // Do
		for i := uint64(0); ; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			c, err := a.qp.Do(ctx, remote(rdmap.SendWR{ID: 3<<32 | i, Op: rdma.OpRead, SGL: []rdma.SGE{whole(dsink)}}, rtarget, 0))
			expired := ctx.Err() != nil
			cancel()
			if err != nil {
				if expired {
					t.Errorf("Do never returned its completion within %v (state %v)", bound, a.qp.State())
				}
				return
			}
			if c.ID != 3<<32|i {
				t.Errorf("Do returned the completion of %#x, want %#x", c.ID, 3<<32|i)
			}
			if c.Status != rdma.StatusSuccess {
				return
			}
		}
	})
	wg.Go(func() { // A's receives (B sends nothing: they all flush)
		rb := a.register(t, make([]byte, 64), mem.AccessLocalWrite)
		for i := uint64(0); i < 32; i++ {
			n, err := a.qp.PostRecv([]rdmap.RecvWR{{ID: 4<<32 | i, SGL: []rdma.SGE{whole(rb)}}})
			if n == 1 {
				l.post(4<<32 | i)
			}
			if err != nil {
				return
			}
			runtime.Gosched()
		}
	})
	consumed := make(chan struct{})
	go func() { // A's CQ consumer
		defer close(consumed)
		var out [8]CQE
		for {
			k := a.cq.Poll(out[:])
			for _, c := range out[:k] {
				l.complete(c.ID)
			}
			if k > 0 {
				continue
			}
			select {
			case <-a.qp.Done():
				if a.cq.Len() == 0 {
					return
				}
				continue
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_ = a.cq.Wait(ctx)
			cancel()
		}
	}()
	spin(delay)
	var what string
	ok := returnsWithin(bound, func() {
		switch teardown {
		case 0:
			what = "A's Close"
			a.qp.Close()
		case 1:
			what = "A's Disconnect (20 ms context)"
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			a.qp.Disconnect(ctx)
			cancel()
		case 2:
			what = "B's Close"
			b.qp.Close()
		default:
			what = "B's Device.Close, then B's Close"
			b.dev.Close()
			b.qp.Close()
		}
	})
	if !ok {
		t.Fatalf("%s has not returned after %v", what, bound)
	}
	close(stop)
	a.closeWithin(t)
	b.closeWithin(t)
	if !returnsWithin(bound, wg.Wait) {
		t.Fatalf("after %s: a poster, Do or PostRecv has not returned", what)
	}
	select {
	case <-consumed:
	case <-time.After(bound):
		t.Fatalf("after %s: A's CQ consumer never saw the end", what)
	}
	if err := l.check(); err != nil {
		t.Errorf("after %s: %v", what, err)
	}
}
