package verbs

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// TestConcurrentPosters: several goroutines post to one QP at once while
// its poller, its transmit goroutine and the peer's move the octets: every
// work request completes exactly once and successfully, whoever held the
// tokens (release-and-recheck never strands work). In every mode.
func TestConcurrentPosters(t *testing.T) {
	const (
		posters = 4
		each    = 300
	)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			o := modeOpts(m.noPoll, m.pipe)
			o.sq, o.rq = 256, posters*each/3
			o.cqCapacity = 1024
			a, b := pair(t, o, o)
			target := b.register(t, make([]byte, 64<<10), mem.AccessRemoteWrite|mem.AccessRemoteRead|mem.AccessRemoteAtomic)
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			// The peer's receives, one per Send: the posters run ahead of
			// the peer's application (a Send completes once written), and
			// a Send that finds no receive is fatal.
			rsgl := []rdma.SGE{{STag: uint32(b.register(t, make([]byte, 64), mem.AccessLocalWrite).STag()), Length: 64}}
			for i := 0; i < posters*each/3; i++ {
				b.postRecv(t, rdmap.RecvWR{ID: uint64(i), SGL: rsgl})
			}
			received := make(chan int, 1)
			go func() {
				n := 0
				var out [16]CQE
				for n < posters*each/3 {
					k := b.cq.Poll(out[:])
					if k == 0 {
						if b.cq.Wait(ctx) != nil {
							break
						}
						continue
					}
					for i := range k {
						if out[i].Status != rdma.StatusSuccess {
							t.Errorf("receive %+v", out[i].Completion)
						}
					}
					n += k
				}
				received <- n
			}()
			var wg sync.WaitGroup
			for p := range posters {
				src := a.register(t, make([]byte, 8<<10), mem.AccessLocalWrite)
				wg.Go(func() {
					w := NewWaiter()
					for i := range each {
						var wr rdmap.SendWR
						switch i % 3 {
						case 0:
							wr = rdmap.SendWR{Op: rdma.OpSend, SGL: []rdma.SGE{{STag: uint32(src.STag()), Length: 16}}}
						case 1:
							wr = remote(rdmap.SendWR{Op: rdma.OpWrite, SGL: []rdma.SGE{{STag: uint32(src.STag()), Length: uint32(1 + i*37%(8<<10))}}}, target, 0)
						default:
							wr = remote(rdmap.SendWR{Op: rdma.OpRead, SGL: []rdma.SGE{{STag: uint32(src.STag()), Length: 4096}}}, target, uint64(p)*4096)
						}
						wr.ID = uint64(p*each + i)
						for {
							err := a.qp.PostWait(wr, w)
							if err == nil {
								break
							}
							if !isFull(err) {
								t.Errorf("poster %d: %v", p, err)
								return
							}
						}
						c, err := w.Wait(ctx)
						if err != nil || c.Status != rdma.StatusSuccess || c.ID != wr.ID {
							t.Errorf("poster %d: WR %d: %+v, %v", p, wr.ID, c, err)
							return
						}
					}
				})
			}
			wg.Wait()
			if n := <-received; n != posters*each/3 {
				t.Errorf("the peer received %d Sends, want %d", n, posters*each/3)
			}
			if n := a.cq.Len(); n != 0 {
				t.Errorf("%d completions on the send CQ: every WR's went to its Waiter", n)
			}
			a.closeWithin(t)
			b.closeWithin(t)
		})
	}
}

// isFull reports whether a post was refused because the queue is full.
func isFull(err error) bool {
	return err != nil && (errors.Is(err, rdmap.ErrSQFull) || errors.Is(err, rdmap.ErrSQNeedsSignaled))
}
