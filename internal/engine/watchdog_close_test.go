package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDisconnectPeerNeverCloses: after Disconnect half-closed, a peer that
// keeps its side open (and says nothing) fails the QP within the operation
// timeout, so Disconnect returns even with a context that never ends.
// (Found by the root package's fault matrix, TestFault/Disconnect-half-closed/stall.)
func TestDisconnectPeerNeverCloses(t *testing.T) {
	a, _ := newTimedSide(t, 200*time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- a.qp.Disconnect(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Disconnect: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Disconnect still waiting for the peer's close 10s after the half-close")
	}
	if !errors.Is(a.qp.Err(), ErrPeerStalled) {
		t.Fatalf("QP error %v, want ErrPeerStalled", a.qp.Err())
	}
}
