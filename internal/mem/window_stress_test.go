package mem

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// windowWorker accesses a parent's bytes [64*(mark-1), 64*mark) through
// windows' STags, in turn a remote pin, a lease with a pin under it and a
// pin of Acquire, and publishes the binding it holds (after pinning,
// withdrawn before unpinning) so a drain can check nobody holds it.
type windowWorker struct {
	held  atomic.Pointer[Region]
	pins  atomic.Int64
	loops atomic.Int64
}

func (h *windowWorker) Revoke(*Region) {}

func (h *windowWorker) run(tab *Table, ws []*Window, mark byte, stop *atomic.Bool, loops *atomic.Int64) {
	lo := uint64(mark-1) * 64
	for i := 0; !stop.Load(); i++ {
		h.loops.Add(1)
		loops.Add(1)
		if i%8 == 7 {
			runtime.Gosched()
		}
		w := ws[i%len(ws)]
		s := w.STag()
		to, n := lo+uint64(i%32), uint64(1+i%32)
		switch i % 3 {
		case 0:
			b, v, g, why := tab.PinRemote(s, 1, AccessRemoteWrite, to, n)
			if why != OK {
				continue
			}
			h.held.Store(v)
			h.pins.Add(1)
			for k := range b {
				b[k] = mark
			}
			h.held.Store(nil)
			v.Unpin(g)
		case 1:
			b, v, g, why := tab.PinRemote(s, 1, AccessRemoteWrite, to, n)
			if why != OK {
				continue
			}
			leased := v.Lease(g, h)
			v.Unpin(g)
			if !leased {
				continue
			}
			h.held.Store(v)
			if v.PinLeased(g, h) {
				h.pins.Add(1)
				b[0] = mark
				v.Unpin(g)
			}
			h.held.Store(nil)
			v.EndLease(g, h)
		default:
			b, v, why := tab.Acquire(s, 1, AccessRemoteWrite, to, n)
			if why != OK {
				continue
			}
			h.held.Store(v)
			h.pins.Add(1)
			b[len(b)-1] = mark
			h.held.Store(nil)
			v.Release()
		}
	}
}

// TestStressWindows: workers write through two windows' STags while the
// test binds, rebinds, unbinds and invalidates them and now and then
// re-keys the parent; every unbind drains, and when it has drained (its
// OnDrained, the return of a blocking Unbind) no worker holds the binding
// it ended. A final deregistration of the parent drains, and after it no
// byte of the buffer changes. Run with -race.
func TestStressWindows(t *testing.T) {
	rounds := 3000
	if raceEnabled || testing.Short() {
		rounds = 300
	}
	tab := NewTable(TableOptions{})
	const workers = 4
	p, buf := newRegion(t, tab, 1, 64*workers, parentAccess, 0)
	w1 := newWindow(t, tab, 1, WindowType1)
	w2 := newWindow(t, tab, 1, WindowType2)
	wins := []*Window{w1, w2}
	hs := make([]*windowWorker, workers)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var loops atomic.Int64
	for i := range hs {
		hs[i] = &windowWorker{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs[i].run(tab, wins, byte(i+1), &stop, &loops)
		}()
	}

	// The parent's generation each binding was made at: a parent Begin
	// ending generation g unbinds every binding made at g or before.
	var bindGen sync.Map // *Region → Gen
	var begun, drains atomic.Int64
	checkView := func(v *Region, inv *Invalidation) func() {
		return func() {
			for i, h := range hs {
				if h.held.Load() == v {
					t.Errorf("unbind drained while worker %d holds the binding", i)
				}
			}
			drains.Add(1)
		}
	}
	checkParent := func(inv *Invalidation) func() {
		return func() {
			for i, h := range hs {
				v := h.held.Load()
				if v == nil {
					continue
				}
				if g, ok := bindGen.Load(v); ok && age(p.life.Load(), g.(Gen)) >= age(p.life.Load(), inv.Gen()) {
					t.Errorf("parent's generation %d drained while worker %d holds a binding made at %d", inv.Gen(), i, g)
				}
			}
			drains.Add(1)
		}
	}
	rebind := func(w *Window, i int) {
		lo := uint64(i%workers) * 64
		n := uint64(64 * (1 + i%workers))
		if lo+n > uint64(len(buf)) {
			n = uint64(len(buf)) - lo
		}
		g := p.Gen()
		old := w.Binding()
		_, inv, err := tab.BeginBind(w, p, lo, n, AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		bindGen.Store(w.Binding(), g)
		if old != nil {
			begun.Add(1)
			inv.OnDrained(checkView(old, inv))
		}
	}
	rebind(w1, 0)
	rebind(w2, 1)
	for i := 0; i < rounds; i++ {
		waitForProgress(&loops)
		switch i % 8 {
		case 0, 2, 4:
			// Type 1: rebind over the current binding.
			rebind(w1, i)
		case 1, 5:
			// Type 2: Local Invalidate then bind.
			v := w2.Binding()
			if r, why := tab.CheckLocalInvalidate(w2.STag(), 1); why == InvalidateOK {
				inv, _ := tab.BeginInvalidate(r, w2.STag())
				begun.Add(1)
				inv.OnDrained(checkView(v, inv))
			}
			rebind(w2, i)
		case 3:
			// A blocking unbind: when it returns nobody holds the binding.
			v := w1.Binding()
			if err := tab.Unbind(t.Context(), w1); err != nil {
				t.Fatal(err)
			}
			for k, h := range hs {
				if h.held.Load() == v {
					t.Fatalf("Unbind returned while worker %d holds the binding", k)
				}
			}
			rebind(w1, i)
		case 6:
			// The parent re-keyed: both windows unbound.
			_, inv, err := tab.BeginRekey(p, parentAccess)
			if err != nil {
				t.Fatal(err)
			}
			begun.Add(1)
			inv.OnDrained(checkParent(inv))
			if w1.Bound() || w2.Bound() {
				t.Fatal("windows bound after the parent's re-key")
			}
			rebind(w1, i)
			rebind(w2, i+1)
		case 7:
			if i%16 == 15 {
				v := w2.Binding()
				inv := tab.BeginUnbind(w2)
				begun.Add(1)
				inv.OnDrained(checkView(v, inv))
				rebind(w2, i)
			}
		}
	}
	inv := tab.BeginDeregister(p)
	begun.Add(1)
	inv.OnDrained(checkParent(inv))
	if err := inv.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	snap := append([]byte(nil), buf...)
	for _, h := range hs {
		waitLoops(&h.loops, 100)
	}
	stop.Store(true)
	wg.Wait()
	if string(snap) != string(buf) {
		t.Fatal("bytes changed after the parent's deregistration drained")
	}
	// Every binding's unbind has drained by now (nothing is pinned).
	for _, w := range wins {
		if err := tab.DeallocWindow(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
	if drains.Load() != begun.Load() {
		t.Fatalf("%d unbinds and invalidations begun, %d drained", begun.Load(), drains.Load())
	}
	if len(p.views) != 0 {
		t.Fatalf("%d bindings left on the parent", len(p.views))
	}
	var total int64
	for _, h := range hs {
		total += h.pins.Load()
	}
	t.Logf("%d rounds, %d accesses through the windows, %d drains", rounds, total, drains.Load())
	if total < int64(rounds)/4 {
		t.Fatalf("the workers got through the windows only %d times in %d rounds", total, rounds)
	}
}
