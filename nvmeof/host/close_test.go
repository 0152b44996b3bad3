package host

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// TestCloseWithOutstandingIO: Close disconnects the I/O queues first; the
// reads the target holds fail with ErrClosed and the shutdown completes.
func TestCloseWithOutstandingIO(t *testing.T) {
	ft := newFakeTarget(t, 4096)
	release := make(chan struct{})
	defer close(release)
	const n = 2 // one per queue: the fake target serves a queue's commands in order
	arrived := holdReads(ft, n, nil, release)
	c, ns := openFake(t, ft, &Config{IOQueues: 2})
	ctx := testCtx(t)
	errc := make(chan error, n)
	for i := range n {
		go func() { errc <- ns.ReadAt(ctx, make([]byte, 512), uint64(i)) }()
	}
	for range n {
		<-arrived
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close(ctx) }()
	for range n {
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("read outstanding at Close: %v", err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("Err after Close: %v", c.Err())
	}
}

// TestCloseBoundedBySilentTarget: a target that stops answering cannot
// hold Close past its context.
func TestCloseBoundedBySilentTarget(t *testing.T) {
	ft := newFakeTarget(t, 64)
	c := connectFake(t, ft, &Config{IOQueues: 1, KATO: -1})
	ft.setHook(func(qid uint16, cmd nvme.Command) fault { return fault{drop: true} })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := c.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close against a silent target: %v", err)
	}
}

// TestCloseDuringLoad: Close while goroutines read and write in a loop;
// each ends with nil or ErrClosed, none hangs, nothing panics.
func TestCloseDuringLoad(t *testing.T) {
	_, addr := startTarget(t, memBackend(t, 4<<20), nil)
	ctx := testCtx(t)
	c, ns := openReal(t, addr, &Config{IOQueues: 2, QueueSize: 8})
	const workers = 16
	started := make(chan struct{}, workers)
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			buf := make([]byte, 4096<<(w%3))
			for i := 0; ; i++ {
				var err error
				if i%2 == 0 {
					err = ns.WriteAt(ctx, buf, uint64(w*64))
				} else {
					err = ns.ReadAt(ctx, buf, uint64(w*64))
				}
				if i == 0 {
					started <- struct{}{}
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for range workers {
		<-started
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close under load: %v", err)
	}
	for range workers {
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("I/O ended by Close: %v", err)
		}
	}
}
