package mem

import (
	"context"
	"errors"
	"testing"
)

// TestReview7UnbindDeallocated: Unbind of a deallocated window waits for
// the deallocation's drain (a pin through the binding) and then reports
// ErrDeallocated, not nil as if the window were merely unbound.
func TestReview7UnbindDeallocated(t *testing.T) {
	tab := NewTable(TableOptions{})
	p, _ := newRegion(t, tab, 1, 64, parentAccess, 0)
	w := newWindow(t, tab, 1, WindowType1)
	s := bind(t, tab, w, p, 0, 64, AccessRemoteWrite)
	_, v, g, why := tab.PinRemote(s, 1, AccessRemoteWrite, 0, 8)
	if why != OK {
		t.Fatal(why)
	}
	if w.Deallocated() {
		t.Fatal("Deallocated before the deallocation")
	}
	inv := tab.BeginDealloc(w)
	if !w.Deallocated() || inv.Drained() {
		t.Fatal("BeginDealloc")
	}
	done := make(chan error)
	go func() { done <- tab.Unbind(context.Background(), w) }()
	v.Unpin(g) // the deallocation drains: Unbind returns
	if err := <-done; !errors.Is(err, ErrDeallocated) || !inv.Drained() {
		t.Fatalf("Unbind of a deallocated window: %v (drained %v)", err, inv.Drained())
	}
	if err := tab.Unbind(context.Background(), w); !errors.Is(err, ErrDeallocated) {
		t.Fatalf("second Unbind: %v", err)
	}
}
