//go:build linux

package verbs

import (
	"context"
	"errors"
	"runtime"
	"strings"
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
	// Wait until the waiter holds the reader role and is parked in the
	// socket's read (its goroutine in IO wait inside waitReading).
	for b.cq.reader.Load() == nil || !b.qp.readerWaiting.Load() || !parkedReading() {
		if ctx.Err() != nil {
			t.Skip("the waiter never parked in the socket's read (no poller here)")
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

// parkedReading reports whether a goroutine is parked in IO wait inside
// the reading waiter.
func parkedReading() bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, ".waitReading(") {
			return true
		}
	}
	return false
}
