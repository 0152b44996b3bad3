package mem

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// holder is a test Holder that counts its revocations and, if endOnRevoke,
// ends its leases from Revoke itself.
type holder struct {
	revoked     atomic.Int32
	endOnRevoke bool
	leases      []Gen // outstanding, for endOnRevoke
	r           *Region
}

func (h *holder) Revoke(r *Region) {
	h.revoked.Add(1)
	if h.r != nil && r != h.r {
		panic("revoked for another region")
	}
	if h.endOnRevoke {
		for _, g := range h.leases {
			r.EndLease(g, h)
		}
		h.leases = nil
	}
}

func (h *holder) lease(t *testing.T, r *Region, g Gen) {
	t.Helper()
	if !r.Lease(g, h) {
		t.Fatalf("Lease(%d) refused", g)
	}
	h.leases = append(h.leases, g)
}

// TestPinGeneration: pins succeed only at the current generation of a valid
// region; every Begin ends the old generation at once.
func TestPinGeneration(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessRemoteWrite, 0)
	g := r.Gen()
	if !r.Pin(g) {
		t.Fatal("Pin at the current generation refused")
	}
	r.Unpin(g)
	if r.Pin(g + 1) {
		t.Fatal("Pin at a future generation accepted")
	}
	s, inv, err := tab.BeginRekey(r, AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Drained() || inv.Gen() != g {
		t.Fatalf("rekey of an unpinned region: drained %v gen %d", inv.Drained(), inv.Gen())
	}
	g2 := r.Gen()
	if g2 == g || r.Pin(g) || !r.Pin(g2) {
		t.Fatalf("after rekey: gen %d→%d, old pin or new pin wrong", g, g2)
	}
	r.Unpin(g2)
	inv2, why := tab.BeginInvalidate(r, s)
	if why != InvalidateOK || inv2.Gen() != g2 {
		t.Fatalf("BeginInvalidate: %v gen %d", why, inv2.Gen())
	}
	if r.Pin(r.Gen()) || r.Pin(g2) || r.Valid() {
		t.Fatal("pin of an invalid region accepted")
	}
	if r.Lease(g2, &holder{}) || r.Lease(r.Gen(), &holder{}) {
		t.Fatal("lease of an invalid region accepted")
	}
	// An STag that is no longer current: nothing to do.
	if inv3, why := tab.BeginInvalidate(r, s); why != InvalidateUnknown || !inv3.Drained() {
		t.Fatalf("second invalidation: %v drained %v", why, inv3.Drained())
	}
	// PinRemote with the old STag after a re-key fails with the Reason
	// Acquire gives.
	s3, _, _ := tab.BeginRekey(r, AccessRemoteWrite)
	if _, _, _, why := tab.PinRemote(s, 1, AccessRemoteWrite, 0, 8); why != InvalidSTag {
		t.Fatalf("old STag: %v", why)
	}
	b, pr, pg, why2 := tab.PinRemote(s3, 1, AccessRemoteWrite, 8, 8)
	if why2 != OK || pr != r || pg != r.Gen() || len(b) != 8 || cap(b) != 8 {
		t.Fatalf("PinRemote: %v %v %d %d", why2, pr == r, pg, len(b))
	}
	pr.Unpin(pg)
}

// TestPinRemoteReasons: PinRemote fails exactly as Acquire and Check do and
// leaves no pin behind.
func TestPinRemoteReasons(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 4096, AccessRemoteWrite|AccessRemoteRead, 0x10000)
	s := r.STag()
	for _, c := range []struct {
		stag STag
		pd   uint32
		need Access
		to   uint64
		n    uint64
	}{
		{s, 1, AccessRemoteWrite, 0x10000, 4096},
		{s ^ 1, 1, AccessRemoteWrite, 0x10000, 1},
		{MakeSTag(s.Index()^1, s.Key()), 1, AccessRemoteWrite, 0x10000, 1},
		{s, 2, AccessRemoteWrite, 0x10000, 1},
		{s, 1, AccessRemoteAtomic, 0x10000, 8},
		{s, 1, AccessRemoteWrite, 0xffff, 2},
		{s, 1, AccessRemoteWrite, ^uint64(0) - 1, 4},
	} {
		_, want := tab.Check(c.stag, c.pd, c.need, c.to, c.n)
		_, pr, g, why := tab.PinRemote(c.stag, c.pd, c.need, c.to, c.n)
		if why != want {
			t.Errorf("%+v: PinRemote %v, Check %v", c, why, want)
		}
		if why == OK {
			pr.Unpin(g)
		}
	}
	if w := r.life.Load(); slotPins(w, 0)|slotPins(w, 1) != 0 {
		t.Fatalf("pins left: %x", w)
	}
}

// TestDrainedNeedsPinsAndLeases: an invalidation drains only when the old
// generation's pins and leases are both gone, whatever the order.
func TestDrainedNeedsPinsAndLeases(t *testing.T) {
	for _, leaseFirst := range []bool{false, true} {
		tab := NewTable(TableOptions{})
		r, _ := newRegion(t, tab, 1, 64, AccessRemoteRead, 0)
		g := r.Gen()
		h := &holder{}
		r.Pin(g)
		h.lease(t, r, g)
		inv := tab.BeginDeregister(r)
		if inv.Drained() || !inv.Leases() {
			t.Fatal("drained with a pin and a lease")
		}
		if leaseFirst {
			r.EndLease(g, h)
			if inv.Drained() || inv.Leases() {
				t.Fatal("after EndLease: drained, or leases reported")
			}
			r.Unpin(g)
		} else {
			r.Unpin(g)
			if inv.Drained() || !inv.Leases() {
				t.Fatal("after Unpin: drained, or the lease not reported")
			}
			r.EndLease(g, h)
		}
		if !inv.Drained() || inv.Leases() {
			t.Fatal("not drained with nothing held")
		}
		if h.revoked.Load() != 0 {
			t.Fatal("holder revoked without a Revoke")
		}
	}
}

// TestOnDrainedOnce: every function runs exactly once, on the goroutine that
// dropped the last pin (before its Unpin returns), or at once if drained.
func TestOnDrainedOnce(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessRemoteRead, 0)
	g := r.Gen()
	r.Pin(g)
	r.Pin(g)
	inv, _ := tab.BeginInvalidate(r, r.STag())
	var a, b, c atomic.Int32
	inv.OnDrained(func() { a.Add(1) })
	inv.OnDrained(func() { b.Add(1) })
	r.Unpin(g)
	if a.Load()+b.Load() != 0 {
		t.Fatal("ran with a pin left")
	}
	r.Unpin(g)
	if a.Load() != 1 || b.Load() != 1 {
		t.Fatalf("after the last Unpin: %d %d", a.Load(), b.Load())
	}
	inv.OnDrained(func() { c.Add(1) })
	if c.Load() != 1 {
		t.Fatal("OnDrained after the drain did not run at once")
	}
	// Nothing runs again: not on more traffic, not on another drain.
	tab.Rekey(r, AccessRemoteRead)
	g2 := r.Gen()
	r.Pin(g2)
	inv2, _ := tab.BeginInvalidate(r, r.STag())
	r.Unpin(g2)
	if !inv2.Drained() || a.Load() != 1 || b.Load() != 1 || c.Load() != 1 {
		t.Fatalf("ran again: %d %d %d", a.Load(), b.Load(), c.Load())
	}
}

// TestRevokeOncePerHolder: Revoke reaches every holder of a lease of the old
// generation (or an older one) exactly once, however many leases it holds
// and however often Revoke is called; holders at the new generation are
// left alone; PinLeased works before the revocation and fails after.
func TestRevokeOncePerHolder(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessRemoteRead, 0)
	g0 := r.Gen()
	h1, h2, h3, h4 := &holder{r: r}, &holder{r: r}, &holder{r: r}, &holder{r: r}
	h1.lease(t, r, g0)
	h1.lease(t, r, g0)
	h2.lease(t, r, g0)
	tab.BeginRekey(r, AccessRemoteRead)
	g1 := r.Gen()
	h1.lease(t, r, g1) // h1 holds two generations
	h3.lease(t, r, g1)
	inv, _ := tab.BeginInvalidate(r, r.STag())
	tab.BeginRekey(r, AccessRemoteRead)
	h4.lease(t, r, r.Gen()) // new generation: not inv's business
	if !r.PinLeased(g1, h3) {
		t.Fatal("PinLeased before the revocation refused")
	}
	r.Unpin(g1)
	if r.PinLeased(g1, h4) {
		t.Fatal("PinLeased without a lease accepted")
	}
	if n := inv.Revoke(); n != 3 {
		t.Fatalf("Revoke reached %d holders, want 3", n)
	}
	if n := inv.Revoke(); n != 0 {
		t.Fatalf("second Revoke reached %d holders", n)
	}
	for i, h := range []*holder{h1, h2, h3} {
		if h.revoked.Load() != 1 {
			t.Errorf("holder %d revoked %d times", i+1, h.revoked.Load())
		}
	}
	if h4.revoked.Load() != 0 {
		t.Error("holder of the new generation revoked")
	}
	if r.PinLeased(g1, h3) || r.PinLeased(g0, h1) {
		t.Fatal("PinLeased after the revocation accepted")
	}
	if !inv.Leases() || inv.Drained() {
		t.Fatal("revoked leases still outstanding must keep the drain")
	}
	for _, h := range []*holder{h1, h2, h3} {
		for _, g := range h.leases {
			r.EndLease(g, h)
		}
	}
	if !inv.Drained() {
		t.Fatal("not drained after every old lease ended")
	}
}

// TestWaitEndsWithoutTimer: Wait ends on the drain, woken by the last
// Unpin, and on its context; inside a synctest bubble the fake clock never
// moves, so nothing slept or polled.
func TestWaitEndsWithoutTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tab := NewTable(TableOptions{})
		r, _ := newRegion(t, tab, 1, 64, AccessRemoteRead, 0)
		g := r.Gen()
		r.Pin(g)
		h := &holder{}
		h.lease(t, r, g)
		inv := tab.BeginDeregister(r)
		start := time.Now()

		ctx, cancel := context.WithCancel(t.Context())
		res := make(chan error, 2)
		go func() { res <- inv.Wait(ctx) }()
		go func() { res <- inv.Wait(t.Context()) }()
		synctest.Wait()
		select {
		case err := <-res:
			t.Fatalf("Wait returned %v with a pin held", err)
		default:
		}
		cancel()
		if err := <-res; !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait after cancel: %v", err)
		}
		r.Unpin(g)
		synctest.Wait()
		select {
		case err := <-res:
			t.Fatalf("Wait returned %v with a lease held", err)
		default:
		}
		r.EndLease(g, h)
		if err := <-res; err != nil {
			t.Fatalf("Wait after the drain: %v", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("the fake clock moved %v: something slept", d)
		}
		if err := inv.Wait(ctx); err != nil {
			t.Fatalf("Wait on a drained invalidation with an ended context: %v", err)
		}
	})
}

// TestBlockingCallsRevoke: Deregister, Invalidate and RekeyContext with a
// lease outstanding and a context that ends: the holder is revoked once,
// the error matches ctx.Err() and names the count, a transient pin taken
// under the lease is still waited for, and the registration is gone or
// invalid either way.
func TestBlockingCallsRevoke(t *testing.T) {
	calls := []struct {
		name string
		call func(ctx context.Context, tab *Table, r *Region) error
		gone func(tab *Table, r *Region) bool
	}{
		{"Deregister", func(ctx context.Context, tab *Table, r *Region) error { return tab.Deregister(ctx, r) },
			func(tab *Table, r *Region) bool { return tab.Lookup(r.STag()) == nil && tab.Len() == 0 }},
		{"Invalidate", func(ctx context.Context, tab *Table, r *Region) error { return tab.Invalidate(ctx, r) },
			func(tab *Table, r *Region) bool { return !r.Valid() && tab.Len() == 1 }},
		{"InvalidateSTag", func(ctx context.Context, tab *Table, r *Region) error {
			return tab.InvalidateSTag(ctx, r, r.STag())
		}, func(tab *Table, r *Region) bool { return !r.Valid() }},
		{"RekeyContext", func(ctx context.Context, tab *Table, r *Region) error {
			_, err := tab.RekeyContext(ctx, r, AccessRemoteRead)
			return err
		}, func(tab *Table, r *Region) bool { return r.Valid() }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tab := NewTable(TableOptions{})
				r, _ := newRegion(t, tab, 1, 64, AccessRemoteRead, 0)
				g := r.Gen()
				quiet, busy := &holder{r: r}, &holder{r: r, endOnRevoke: true}
				quiet.lease(t, r, g)
				busy.lease(t, r, g)
				busy.lease(t, r, g)
				if !r.PinLeased(g, quiet) { // an access in progress under the lease
					t.Fatal("PinLeased refused")
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				res := make(chan error, 1)
				go func() { res <- c.call(ctx, tab, r) }()
				synctest.Wait() // blocked in the wait for the drain
				time.Sleep(time.Second)
				synctest.Wait() // revoked; now waiting for the transient pin
				select {
				case err := <-res:
					t.Fatalf("returned %v with a transient pin held", err)
				default:
				}
				if quiet.revoked.Load() != 1 || busy.revoked.Load() != 1 {
					t.Fatalf("revocations %d, %d", quiet.revoked.Load(), busy.revoked.Load())
				}
				r.Unpin(g)
				err := <-res
				var re *RevokedError
				if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &re) || re.Holders != 2 || re.InUse {
					t.Fatalf("error %v (%#v)", err, re)
				}
				if !strings.Contains(err.Error(), "revoked 2 holder(s)") || !strings.Contains(err.Error(), "deadline exceeded") {
					t.Fatalf("message %q", err)
				}
				if !c.gone(tab, r) {
					t.Fatal("registration not in its final state")
				}
				if r.PinLeased(g, quiet) || r.Pin(g) {
					t.Fatal("old generation still pinnable")
				}
				r.EndLease(g, quiet)
			})
		})
	}
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessRemoteRead, 0)
	h := &holder{}
	h.lease(t, r, r.Gen())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := tab.Deregister(ctx, r); !errors.Is(err, context.Canceled) {
		t.Fatalf("Deregister with an ended context: %v", err)
	}
	if err := tab.Deregister(t.Context(), r); !errors.Is(err, ErrDeregistered) {
		t.Fatalf("Deregister after a revoked one: %v", err)
	}
}

// TestNothingToInvalidate: an invalidation of an STag a re-key replaced does
// nothing, but its handle still waits for the re-key's pending drain, and
// InvalidateSTag (the engine's call) returns only after it.
func TestNothingToInvalidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tab := NewTable(TableOptions{})
		r, _ := newRegion(t, tab, 1, 64, AccessRemoteWrite, 0)
		old, g := r.STag(), r.Gen()
		r.Pin(g)
		ns, _, _ := tab.BeginRekey(r, AccessRemoteWrite)
		inv, why := tab.BeginInvalidate(r, old)
		if why != InvalidateUnknown || inv.Drained() || inv.Gen() != g {
			t.Fatalf("stale STag: %v, drained %v, gen %d", why, inv.Drained(), inv.Gen())
		}
		done := make(chan error, 1)
		go func() { done <- tab.InvalidateSTag(t.Context(), r, old) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("InvalidateSTag returned %v with the old generation pinned", err)
		default:
		}
		r.Unpin(g)
		if err := <-done; err != nil || !inv.Drained() {
			t.Fatalf("after the Unpin: %v, drained %v", err, inv.Drained())
		}
		if !r.Valid() || r.STag() != ns {
			t.Fatal("the stale invalidation changed the re-keyed region")
		}
	})
}
