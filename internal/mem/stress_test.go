package mem

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stressWorker pins and leases a region in a loop, writing its mark into
// the pinned bytes, and publishes the generation it holds (after pinning,
// withdrawn before unpinning) so a drain can check nobody holds an old one.
type stressWorker struct {
	held  atomic.Int64 // generation held + 1, or 0
	pins  atomic.Int64 // successful pins, for the test's progress check
	loops atomic.Int64 // attempts
}

func (h *stressWorker) Revoke(*Region) {}

// drainChecker returns an OnDrained function that fails the test if a
// worker still holds the ended generation or an older one.
func drainChecker(t *testing.T, r *Region, inv *Invalidation, ws []*stressWorker, drains *atomic.Int64) func() {
	return func() {
		w := r.life.Load()
		for i, sw := range ws {
			if h := sw.held.Load(); h != 0 && age(w, Gen(h-1)) >= age(w, inv.old) {
				t.Errorf("generation %d drained while worker %d holds generation %d", inv.old, i, h-1)
			}
		}
		drains.Add(1)
	}
}

// run is one worker's loop until stop: a remote pin by STag, a local pin at
// the current generation, and a lease with a pin under it, in turn. Worker
// mark writes bytes [16*(mark-1), 16*mark) of the 64.
func (h *stressWorker) run(tab *Table, r *Region, mark byte, stop *atomic.Bool, loops *atomic.Int64) {
	for i := 0; !stop.Load(); i++ {
		h.loops.Add(1)
		loops.Add(1)
		if i%8 == 7 {
			runtime.Gosched() // more workers than processors: let the Begins in
		}
		switch i % 3 {
		case 0:
			b, pr, g, why := tab.PinRemote(r.STag(), 1, AccessRemoteWrite, 0, 64)
			if why != OK {
				continue
			}
			h.held.Store(int64(g) + 1)
			h.pins.Add(1)
			b[int(mark-1)*16+i%16] = mark
			h.held.Store(0)
			pr.Unpin(g)
		case 1:
			g := r.Gen()
			if !r.Pin(g) {
				continue
			}
			h.held.Store(int64(g) + 1)
			h.pins.Add(1)
			r.Bytes()[int(mark-1)*16+i%16] = mark
			h.held.Store(0)
			r.Unpin(g)
		default:
			g := r.Gen()
			if !r.Lease(g, h) {
				continue
			}
			h.held.Store(int64(g) + 1)
			if r.PinLeased(g, h) {
				h.pins.Add(1)
				r.Bytes()[int(mark-1)*16+i%16] = mark
				r.Unpin(g)
			}
			h.held.Store(0)
			r.EndLease(g, h)
		}
	}
}

// TestStressBeginsUnderTraffic: workers pin, write and lease while the main
// goroutine re-keys and invalidates over and over; every invalidation drains
// (each OnDrained checks that no worker holds its generation), and after a
// final deregistration has drained no byte of the buffer changes.
func TestStressBeginsUnderTraffic(t *testing.T) {
	rounds := 2000
	if raceEnabled || testing.Short() {
		rounds = 200
	}
	tab := NewTable(TableOptions{})
	r, buf := newRegion(t, tab, 1, 64, AccessRemoteWrite|AccessLocalWrite, 0)
	ws := make([]*stressWorker, 4)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var loops atomic.Int64
	for i := range ws {
		ws[i] = &stressWorker{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[i].run(tab, r, byte(i+1), &stop, &loops)
		}()
	}
	var begun, drains atomic.Int64
	for i := 0; i < rounds; i++ {
		// Let the workers move between Begins, so they interleave.
		waitForProgress(&loops)
		var inv *Invalidation
		if i%4 == 3 {
			inv, _ = tab.BeginInvalidate(r, r.STag())
			begun.Add(1)
			inv.OnDrained(drainChecker(t, r, inv, ws, &drains))
			if i%8 == 7 {
				if err := inv.Wait(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, inv, err := tab.BeginRekey(r, AccessRemoteWrite|AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		begun.Add(1)
		inv.OnDrained(drainChecker(t, r, inv, ws, &drains))
	}
	inv := tab.BeginDeregister(r)
	begun.Add(1)
	inv.OnDrained(drainChecker(t, r, inv, ws, &drains))
	if err := inv.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	snap := append([]byte(nil), buf...)
	// The workers keep trying for a while: nothing may land any more.
	for _, w := range ws {
		waitLoops(&w.loops, 100)
	}
	stop.Store(true)
	wg.Wait()
	if string(snap) != string(buf) {
		t.Fatal("bytes changed after the deregistration drained")
	}
	if drains.Load() != begun.Load() {
		t.Fatalf("%d invalidations begun, %d drained", begun.Load(), drains.Load())
	}
	var total int64
	for _, w := range ws {
		total += w.pins.Load()
	}
	if total < int64(rounds) {
		t.Fatalf("the workers pinned only %d times in %d rounds", total, rounds)
	}
}

// TestRekeyUnderSteadyTraffic: a re-key finishes while pins at the new
// generation come and go without pause (the two per-generation slots), and
// so do re-keys in a row.
func TestRekeyUnderSteadyTraffic(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessLocalWrite, 0)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var pins atomic.Int64
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				// Always two pins overlapping, so the current slot is never
				// empty for long.
				g := r.Gen()
				if r.Pin(g) {
					if r.Pin(g) {
						pins.Add(1)
						r.Unpin(g)
					}
					r.Unpin(g)
				}
			}
		}()
	}
	for pins.Load() < 100 {
		waitForProgress(&pins)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		_, inv, err := tab.BeginRekey(r, AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		if err := inv.Wait(ctx); err != nil {
			t.Fatalf("re-key %d under steady traffic did not finish: %v", i, err)
		}
	}
	if _, err := tab.RekeyContext(ctx, r, AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()
}

// waitForProgress spins until n changes once (another goroutine runs on
// the other processor; it yields now and then in case none does).
func waitForProgress(n *atomic.Int64) {
	for i, v := 0, n.Load(); n.Load() == v; i++ {
		if i%1024 == 1023 {
			runtime.Gosched()
		}
	}
}

// waitLoops yields until n has grown by k.
func waitLoops(n *atomic.Int64, k int64) {
	for v := n.Load(); n.Load() < v+k; {
		runtime.Gosched()
	}
}

// TestStalePins: a pin held across several Begins (its slot reused, its
// count moved to stale) keeps every one of them from draining, and its
// Unpin drains them all, oldest first; across the generation counter's
// wrap too.
func TestStalePins(t *testing.T) {
	for _, start := range []Gen{0, genMask - 1} {
		tab := NewTable(TableOptions{})
		r, _ := newRegion(t, tab, 1, 64, AccessLocalWrite, 0)
		r.life.Store(liveBit | uint64(start)<<genShift)
		g := r.Gen()
		if g != start || !r.Pin(g) {
			t.Fatalf("pin at %d", start)
		}
		var order []Gen
		var invs []*Invalidation
		for i := 0; i < 4; i++ {
			_, inv, _ := tab.BeginRekey(r, AccessLocalWrite)
			inv.OnDrained(func() { order = append(order, inv.Gen()) })
			invs = append(invs, inv)
			// Traffic at the new generation comes and goes.
			ng := r.Gen()
			r.Pin(ng)
			r.Unpin(ng)
		}
		if r.stale.Load() != 1 {
			t.Fatalf("stale %d, want the one old pin", r.stale.Load())
		}
		for _, inv := range invs {
			if inv.Drained() {
				t.Fatal("drained with the old pin held")
			}
		}
		r.Unpin(g)
		if len(order) != 4 {
			t.Fatalf("drained %d of 4", len(order))
		}
		for i, og := range order {
			if og != (start+Gen(i))&genMask {
				t.Fatalf("drain order %v from %d", order, start)
			}
		}
		if r.stale.Load() != 0 || r.life.Load()&pendingBit != 0 {
			t.Fatal("bookkeeping left")
		}
	}
}

// TestDeregisterEnds: Rekey and Lease after deregistration fail, a second
// BeginDeregister returns the same Invalidation, and Acquire's pins held
// when the context ends leave the job unfinished (InUse) for a later call.
func TestDeregisterEnds(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessRemoteWrite, 0)
	_, _, why := tab.Acquire(r.STag(), 1, AccessRemoteWrite, 0, 8)
	if why != OK {
		t.Fatal(why)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := tab.Deregister(ctx, r)
	var re *RevokedError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || !re.InUse {
		t.Fatalf("Deregister with an Acquire pin held: %v", err)
	}
	if inv := tab.BeginDeregister(r); inv != r.dereg || inv.Drained() {
		t.Fatal("second BeginDeregister: another handle, or drained")
	}
	if _, err := tab.Rekey(r, AccessRemoteWrite); !errors.Is(err, ErrDeregistered) {
		t.Fatalf("Rekey after Deregister: %v", err)
	}
	if r.Lease(r.Gen(), &holder{}) || r.Pin(r.Gen()) {
		t.Fatal("pinned or leased after Deregister")
	}
	done := make(chan error, 1)
	go func() { done <- tab.Deregister(context.Background(), r) }()
	r.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := tab.Deregister(ctx, r); !errors.Is(err, ErrDeregistered) {
		t.Fatalf("third Deregister: %v", err)
	}
}

// leaseWorker holds a lease across many accesses (as a Read Response being
// sent does), writing a new value each time.
type leaseWorker struct {
	revoked atomic.Bool
	loops   atomic.Int64
	writes  atomic.Int64
}

func (h *leaseWorker) Revoke(*Region) { h.revoked.Store(true) }

func (h *leaseWorker) run(r *Region, mark byte, stop *atomic.Bool) {
	for !stop.Load() {
		h.loops.Add(1)
		g := r.Gen()
		if !r.Lease(g, h) {
			runtime.Gosched()
			continue
		}
		// Only PinLeased says when to stop: a revoked worker that did not
		// look at its flag still cannot write.
		for i := 0; i < 64; i++ {
			if !r.PinLeased(g, h) {
				break
			}
			runtime.Gosched()                                      // a system call in progress under the pin
			r.Bytes()[int(mark-1)*16+i%16] = byte(h.writes.Add(1)) // never the byte's old value
			r.Unpin(g)
		}
		r.EndLease(g, h)
	}
}

// TestStressDeregisterRevokes: Deregister with a short context while
// workers hold leases: whether it drains or revokes, no byte of the buffer
// changes after it returns, and a revocation is reported with its count.
func TestStressDeregisterRevokes(t *testing.T) {
	rounds := 40
	if raceEnabled || testing.Short() {
		rounds = 10
	}
	var revokedRuns int
	for round := 0; round < rounds; round++ {
		tab := NewTable(TableOptions{})
		r, buf := newRegion(t, tab, 1, 64, AccessRemoteRead, 0)
		ws := make([]*leaseWorker, 4)
		var stop atomic.Bool
		var wg sync.WaitGroup
		for i := range ws {
			ws[i] = &leaseWorker{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ws[i].run(r, byte(i+1), &stop)
			}()
		}
		for _, w := range ws {
			waitForProgress(&w.writes)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		err := tab.Deregister(ctx, r)
		cancel()
		snap := append([]byte(nil), buf...)
		var re *RevokedError
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) && errors.As(err, &re) && re.Holders >= 1 && re.Holders <= len(ws) && !re.InUse:
			revokedRuns++
		default:
			t.Fatalf("Deregister: %v", err)
		}
		for _, w := range ws {
			waitLoops(&w.loops, 10)
		}
		stop.Store(true)
		wg.Wait()
		if string(snap) != string(buf) {
			t.Fatalf("round %d: bytes changed after Deregister returned %v", round, err)
		}
		if inv := tab.BeginDeregister(r); !inv.Drained() {
			t.Fatalf("round %d: leases left after the workers ended theirs", round)
		}
	}
	t.Logf("%d of %d rounds revoked", revokedRuns, rounds)
}
