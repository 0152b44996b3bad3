//go:build linux

package verbs

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// TestCQCloseWakesReadingWaiter: a Wait that parked in its QP's socket read
// (the reading waiter) returns ErrCQClosed when the CQ is closed, as a Wait
// parked on the wake-up channel does. It used to stay parked until data
// arrived (BenchmarkRoundTrip hung at its end).
func TestCQCloseWakesReadingWaiter(t *testing.T) {
	_, b := defaultPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- b.cq.Wait(ctx) }()
	// Wait until the waiter holds the reader role and is parked in the read.
	for b.cq.reader.Load() == nil || !b.qp.readerWaiting.Load() {
		if ctx.Err() != nil {
			t.Skip("the waiter never took the reading role (no poller here)")
		}
		runtime.Gosched()
	}
	b.cq.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrCQClosed) {
			t.Fatalf("Wait after Close = %v, want %v", err, ErrCQClosed)
		}
	case <-ctx.Done():
		t.Fatal("a reading waiter was not woken by CQ.Close")
	}
}
