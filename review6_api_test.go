package iwarp_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestReview6ConcurrentPostSendCallerSliceNotRetained: with the root
// mutex gone, many goroutines post on one QP at once, and each overwrites
// its SGL and SendWR right after PostSend returns (another region's key,
// another length): what arrives must be what was posted.
func TestReview6ConcurrentPostSendCallerSliceNotRetained(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const workers, per, size = 8, 6, 64
	rbufs := make([][]byte, workers*per)
	for i := range rbufs {
		rbufs[i] = make([]byte, size)
		mr, err := b.pd.RegisterMemory(rbufs[i], iwarp.AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{mr.SGE(0, size)}}); err != nil {
			t.Fatal(err)
		}
	}
	junk, _ := a.pd.RegisterMemory(bytes.Repeat([]byte{0xEE}, 4*size), 0)
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		src := bytes.Repeat([]byte{byte(w + 1)}, size)
		mr, err := a.pd.RegisterMemory(src, 0)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				wrs := []iwarp.SendWR{{ID: uint64(w*per + i), Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: []iwarp.SGE{mr.SGE(0, size)}}}
				for {
					err := a.qp.PostSend(wrs...)
					if errors.Is(err, iwarp.ErrQueueFull) {
						continue
					}
					if err != nil {
						errc <- err
						return
					}
					break
				}
				wrs[0].SGL[0] = junk.SGE(0, 4*size)
				wrs[0].Op, wrs[0].Flags = iwarp.OpWrite, 0
			}
		}()
	}
	// Poll the send CQ concurrently (several pollers), which also frees
	// the slots the posters wait for.
	var got sync.Map
	var pollers sync.WaitGroup
	var sent sync.WaitGroup
	sent.Add(workers * per)
	for range 3 {
		pollers.Add(1)
		go func() {
			defer pollers.Done()
			var out [4]iwarp.Completion
			for ctx.Err() == nil {
				n := a.cq.Poll(out[:])
				for _, c := range out[:n] {
					if c.Status != iwarp.StatusSuccess || c.QPNum != a.qp.Num() {
						errc <- c.Err
						sent.Done()
						continue
					}
					if _, loaded := got.LoadOrStore(c.ID, true); loaded {
						t.Errorf("send completion %d polled twice", c.ID)
					}
					sent.Done()
				}
			}
		}()
	}
	wg.Wait()
	sent.Wait()
	cancel()
	pollers.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	counts := map[byte]int{}
	for range workers * per {
		c, err := b.cq.Next(ctx2)
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != iwarp.StatusSuccess || c.Len != size || c.QPNum != b.qp.Num() {
			t.Fatalf("receive %+v", c)
		}
		buf := rbufs[c.ID]
		if !bytes.Equal(buf, bytes.Repeat(buf[:1], size)) || buf[0] == 0 || buf[0] > workers {
			t.Fatalf("receive %d holds %x", c.ID, buf[:8])
		}
		counts[buf[0]]++
	}
	for w := range workers {
		if counts[byte(w+1)] != per {
			t.Fatalf("messages per sender %v", counts)
		}
	}
}

// TestReview6ClosedIdleQPErrors: a QP closed before it connected refuses
// posts with errors that match both ErrQPClosed and ErrClosed.
func TestReview6ClosedIdleQPErrors(t *testing.T) {
	e := newEndpoint(t)
	buf, _ := e.pd.RegisterMemory(make([]byte, 8), iwarp.AccessLocalWrite)
	if err := e.qp.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"PostSend": e.qp.PostSend(iwarp.SendWR{Op: iwarp.OpSend}),
		"PostRecv": e.qp.PostRecv(iwarp.RecvWR{SGL: []iwarp.SGE{buf.SGE(0, 8)}}),
		"Send":     e.qp.Send(context.Background(), buf.SGE(0, 8)),
	} {
		if !errors.Is(err, iwarp.ErrQPClosed) || !errors.Is(err, iwarp.ErrClosed) {
			t.Errorf("%s on a closed idle QP: %v, want ErrQPClosed and ErrClosed", name, err)
		}
	}
}
