package host

import (
	"context"
	"errors"
	"testing"
)

// TestReviewWriteWithEndedContext: a WriteAt whose context has already
// ended returns its error without sending the write. Before the fix a free
// slot was taken without looking at the context, so the write went to the
// controller (and changed the blocks) and only the wait saw the context.
func TestReviewWriteWithEndedContext(t *testing.T) {
	ft := newFakeTarget(t, 4096)
	_, ns := openFake(t, ft, &Config{IOQueues: 1})
	ctx := testCtx(t)
	dead, cancel := context.WithCancel(ctx)
	cancel()
	p := make([]byte, 4096)
	pattern(p, 3)
	if err := ns.WriteAt(dead, p, 8); !errors.Is(err, context.Canceled) {
		t.Fatalf("write with an ended context: %v", err)
	}
	bigw := make([]byte, 1<<20)
	pattern(bigw, 5)
	if err := ns.WriteAt(dead, bigw, 64); !errors.Is(err, context.Canceled) {
		t.Fatalf("split write with an ended context: %v", err)
	}
	// One I/O queue: the fake target serves its commands in order, so
	// this read sees any write sent before it.
	got := make([]byte, 4096)
	if err := ns.ReadAt(ctx, got, 8); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(make([]byte, 4096)) {
		t.Fatal("a write whose context had ended reached the namespace")
	}
	big := make([]byte, 1<<20)
	if err := ns.ReadAt(ctx, big, 64); err != nil {
		t.Fatal(err)
	}
	if string(big) != string(make([]byte, 1<<20)) {
		t.Fatal("a split write whose context had ended reached the namespace")
	}
}
