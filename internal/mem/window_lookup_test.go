package mem

import (
	"errors"
	"testing"
)

// TestLookupWindowAndBeginBindAt: LookupWindow finds a window by its
// index whatever the key, and nothing at a region's index or once the
// window is deallocated; BeginBindAt binds only the window's current STag
// (a bind naming an older one fails, however the window got unbound), and
// only while the parent is at the generation given; a refused bind leaves
// the window unbound.
func TestLookupWindowAndBeginBindAt(t *testing.T) {
	tab := NewTable(TableOptions{})
	p, err := tab.Register(1, make([]byte, 64), parentAccess, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := newWindow(t, tab, 1, WindowType2)
	if tab.LookupWindow(w.STag()) != w || tab.LookupWindow(w.STag()^0xFF) != w || tab.LookupWindow(p.STag()) != nil {
		t.Fatal("LookupWindow")
	}
	g := p.Gen()
	if _, err := tab.Rekey(p, parentAccess); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tab.BeginBindAt(w, w.STag(), p, g, 0, 8, AccessRemoteRead); !errors.Is(err, ErrParentInvalid) || w.Bound() {
		t.Fatalf("bind at an old generation: %v, bound %v", err, w.Bound())
	}
	allocated := w.STag()
	s, _, err := tab.BeginBindAt(w, allocated, p, p.Gen(), 0, 8, AccessRemoteRead)
	if err != nil || !w.Bound() || s != w.STag() {
		t.Fatalf("bind at the current generation: %v", err)
	}
	// Unbound again, the window may be bound, but only by a bind that names
	// its current STag: one naming an STag it had before fails.
	tab.BeginInvalidate(w.Binding(), s)
	if _, _, err := tab.BeginBindAt(w, allocated, p, p.Gen(), 0, 8, AccessRemoteRead); !errors.Is(err, ErrWindowStale) || w.Bound() {
		t.Fatalf("bind naming an old STag of the window: %v, bound %v", err, w.Bound())
	}
	if s, _, err = tab.BeginBindAt(w, w.STag(), p, p.Gen(), 0, 8, AccessRemoteRead); err != nil || s != w.STag() {
		t.Fatalf("bind naming the current STag: %v", err)
	}
	tab.BeginDealloc(w)
	if tab.LookupWindow(s) != nil {
		t.Fatal("LookupWindow found a deallocated window")
	}
}
