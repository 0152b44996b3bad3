package iwarp_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestConcurrentWaitersStress drives the receive role (docs/verbs.md
// §6.15) from several goroutines at once: blocking FetchAdds and Reads on
// one QP, some with contexts that end while they wait, beside a goroutine
// waiting on the CQ for the peer's Sends, until the QP is closed under
// them. Every call returns, every FetchAdd that reported success is in the
// counter (and no more than were posted), every Read placed the right
// bytes, and nothing fails but by the close or a context.
func TestConcurrentWaitersStress(t *testing.T) {
	a, b := connectPairDepth(t, 64)
	word, _ := b.pd.RegisterMemory(alignedBuf(8), iwarp.AccessRemoteAtomic)
	pattern := make([]byte, 4096)
	for i := range pattern {
		pattern[i] = byte(i*7 + 3)
	}
	src, _ := b.pd.RegisterMemory(pattern, iwarp.AccessRemoteRead)
	recvBuf, _ := a.pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
	sendBuf, _ := b.pd.RegisterMemory(make([]byte, 64), 0)

	const workers, rounds = 4, 600
	var succeeded, attempted, progress atomic.Uint64
	var wg sync.WaitGroup
	errc := make(chan error, workers+2)
	closing := make(chan struct{})
	unexpected := func(err error) bool {
		select {
		case <-closing:
			return false // anything may fail once the QP is being closed
		default:
		}
		// A request whose context ended stays in flight with its
		// send-queue slot until it completes: the queue may be full.
		return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, iwarp.ErrQueueFull)
	}
	for w := range workers {
		sink, _ := a.pd.RegisterMemory(make([]byte, 512), iwarp.AccessLocalWrite)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range rounds {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rng.IntN(4) == 0 { // a context that may end mid-wait
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(rng.IntN(200))*time.Microsecond)
				}
				var err error
				if (w+i)%2 == 0 {
					attempted.Add(1)
					if _, err = a.qp.FetchAdd(ctx, word.Remote(), 1); err == nil {
						succeeded.Add(1)
					}
				} else {
					off := rng.IntN(len(pattern) - 512)
					remote, rerr := src.RemoteSlice(off, 512)
					if rerr != nil {
						cancel()
						errc <- rerr
						return
					}
					if err = a.qp.Read(ctx, remote, sink.SGE(0, 512)); err == nil {
						if got := sink.Bytes(); string(got) != string(pattern[off:off+512]) {
							err = errors.New("a Read placed the wrong bytes")
						}
					}
				}
				cancel()
				progress.Add(1)
				if err != nil && unexpected(err) {
					errc <- err
					return
				}
				select {
				case <-closing:
					return
				default:
				}
				if err != nil && errors.Is(err, context.DeadlineExceeded) {
					// The request stays in flight with this buffer: use
					// another one from here on (docs/semantics.md rule 5).
					sink, _ = a.pd.RegisterMemory(make([]byte, 512), iwarp.AccessLocalWrite)
				}
			}
		}()
	}
	// The peer sends eight messages into a's eight receives while a
	// goroutine waits on a's CQ for them (the blocking calls complete to
	// their callers, not to the CQ).
	for range 8 {
		if err := a.qp.PostRecv(iwarp.RecvWR{SGL: []iwarp.SGE{recvBuf.SGE(0, 64)}}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 8 {
			if err := b.qp.Send(context.Background(), sendBuf.SGE(0, 64)); err != nil {
				if unexpected(err) {
					errc <- err
				}
				return
			}
			time.Sleep(time.Duration(i%3) * 200 * time.Microsecond)
		}
	}()
	go func() {
		defer wg.Done()
		for {
			c, err := a.cq.Next(context.Background())
			if err != nil || c.Status != iwarp.StatusSuccess {
				return // closed: the CQ is closed or the receives flushed
			}
		}
	}()

	// Close the QPs while the workers are busy, half-way through.
	deadline := time.After(60 * time.Second)
	for progress.Load() < workers*rounds/2 {
		select {
		case err := <-errc:
			t.Fatal(err)
		case <-deadline:
			t.Fatalf("the workers made no progress (%d rounds)", progress.Load())
		case <-time.After(time.Millisecond):
		}
	}
	close(closing)
	a.qp.Close()
	b.qp.Close()
	_ = a.cq.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a waiter did not return after the QP was closed")
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	t.Logf("%d rounds before the close, %d FPDUs handled by waiters of %d received", progress.Load(), a.qp.Stats().FPDUsByWaiters, a.qp.Stats().FPDUsReceived)
	v, err := word.AtomicLoad(0)
	if err != nil {
		t.Fatal(err)
	}
	if s, n := succeeded.Load(), attempted.Load(); v < s || v > n {
		t.Fatalf("the counter is %d: %d FetchAdds succeeded, %d were posted", v, s, n)
	}
}
