package mem

import (
	"context"
	"sync/atomic"
)

// An Invalidation is a registration's change of generation in progress: an
// invalidation of its STag (local or remote), a deregistration or a re-key.
// It is created by BeginInvalidate, BeginDeregister or BeginRekey, which
// clear the valid bit and move to the next generation at once: later Pin,
// Lease and PinRemote at the old generation fail. The Invalidation reports
// when no pin or lease of the old generation (or an older one) remains.
// A memory window's unbind is the Invalidation of its binding (window.go);
// a region's Invalidation also waits for the unbinds of the windows its
// Begin ended or found still draining.
type Invalidation struct {
	r   *Region
	old Gen // the generation that ended

	done atomic.Bool   // drained; set before ch is closed and fns run
	ch   chan struct{} // closed when drained

	// Guarded by r.mu.
	fns    []func()      // OnDrained functions not yet run
	pinsCh chan struct{} // after Revoke: closed when no transient pin of old or older remains
	// views are the unbindings of r's memory windows this Invalidation
	// waits for (window.go): each leaves the list when it drains.
	views []*Invalidation
}

// drained returns an Invalidation that has nothing to wait for.
func drained(r *Region, old Gen) *Invalidation {
	i := &Invalidation{r: r, old: old, ch: make(chan struct{})}
	i.done.Store(true)
	close(i.ch)
	return i
}

// Gen returns the generation that ended.
func (i *Invalidation) Gen() Gen { return i.old }

// Drained reports whether no pin or lease of the old generation (or an
// older one) remains.
func (i *Invalidation) Drained() bool { return i.done.Load() }

// Leases reports whether leases of the old generation (or an older one)
// remain, or leases of the bindings of memory windows it waits for.
func (i *Invalidation) Leases() bool {
	if i.done.Load() {
		return false
	}
	r := i.r
	r.mu.Lock()
	l := r.leasesUpTo(r.life.Load(), i.old)
	views := i.viewsLocked()
	r.mu.Unlock()
	if l {
		return true
	}
	for _, v := range views {
		if v.Leases() {
			return true
		}
	}
	return false
}

// viewsLocked returns a copy of the unbindings of windows i waits for, or
// nil. Called with i.r.mu held.
func (i *Invalidation) viewsLocked() []*Invalidation {
	if len(i.views) == 0 {
		return nil
	}
	return append([]*Invalidation(nil), i.views...)
}

// inUse reports whether pins of Acquire are held on the region or on the
// bindings of windows i waits for.
func (i *Invalidation) inUse() bool {
	if i.r.legacy.Load() != 0 {
		return true
	}
	i.r.mu.Lock()
	views := i.viewsLocked()
	i.r.mu.Unlock()
	for _, v := range views {
		if v.inUse() {
			return true
		}
	}
	return false
}

// OnDrained arranges for f to run once when the Invalidation has drained:
// on the goroutine that drops the last pin or lease, or at once (on the
// calling goroutine) if it has drained already. f must not block.
func (i *Invalidation) OnDrained(f func()) {
	if !i.done.Load() {
		r := i.r
		r.mu.Lock()
		if !i.done.Load() {
			i.fns = append(i.fns, f)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
	f()
}

// Wait blocks until the Invalidation has drained or ctx ends, and then
// returns nil or ctx's error. Nothing polls: it is woken by the last Unpin,
// Release or EndLease.
func (i *Invalidation) Wait(ctx context.Context) error {
	select {
	case <-i.ch:
		return nil
	default:
	}
	select {
	case <-i.ch:
		return nil
	case <-ctx.Done():
		if i.done.Load() {
			return nil
		}
		return ctx.Err()
	}
}

// Revoke calls Revoke on each holder of a lease of the old generation (or
// an older one) that has not been revoked yet, once per holder, and returns
// how many holders it called. From then on PinLeased fails for those
// leases. Revoke runs the holders' Revoke methods on the calling goroutine.
// The holders of leases on the bindings of memory windows the Invalidation
// waits for are revoked too (with the binding as Revoke's region), and
// counted once per binding they hold leases on.
func (i *Invalidation) Revoke() int {
	if i.done.Load() {
		return 0
	}
	r := i.r
	r.mu.Lock()
	w := r.life.Load()
	ag := age(w, i.old)
	var hs []Holder
	for k, l := range r.leases {
		if l.revoked || age(w, k.g) < ag {
			continue
		}
		l.revoked = true
		r.leases[k] = l
		if !containsHolder(hs, k.h) {
			hs = append(hs, k.h)
		}
	}
	views := i.viewsLocked()
	r.mu.Unlock()
	for _, h := range hs {
		h.Revoke(r)
	}
	n := len(hs)
	for _, v := range views {
		n += v.Revoke()
	}
	return n
}

func containsHolder(hs []Holder, h Holder) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

// waitPins blocks until no transient pin of the old generation (or an older
// one) remains, whatever the leases. It is for after Revoke: from then on no
// such pin can be taken (Pin fails at an old generation, PinLeased for a
// revoked lease), and transient pins involve no peer.
func (i *Invalidation) waitPins() {
	r := i.r
	r.mu.Lock()
	views := i.viewsLocked()
	if i.done.Load() || r.transientGone(r.life.Load(), i.old) {
		r.mu.Unlock()
	} else {
		if i.pinsCh == nil {
			i.pinsCh = make(chan struct{})
		}
		ch := i.pinsCh
		r.mu.Unlock()
		<-ch
	}
	// Pins through the region's windows: their bindings are invalid and
	// their leases revoked, so no new one can be taken either.
	for _, v := range views {
		v.waitPins()
	}
}

// transientGone reports whether no transient pin of generation g or older
// remains, w being a recent load of the life word. Pins of g are in slot
// g&1 while g is the previous generation and in stale after; stale holds
// every older generation's pins (and, for a moment, a Begin's pre-count).
func (r *Region) transientGone(w uint64, g Gen) bool {
	if age(w, g) == 1 && slotPins(w, g) != 0 {
		return false
	}
	return r.stale.Load() == 0
}

// settle runs the drain of every pending invalidation that has drained.
func (r *Region) settle() {
	r.mu.Lock()
	fns := r.settleLocked()
	r.mu.Unlock()
	runAll(fns)
}

// settleLocked marks drained the pending invalidations (oldest first) whose
// pins and leases are gone, wakes their waiters, and returns their OnDrained
// functions for the caller to run after unlocking mu. Each later pending
// invalidation waits for everything an earlier one does, so none drains
// before an earlier one; a later one's pins may be gone though (its
// post-Revoke wait ends) while an earlier one waits for leases. Called
// with mu held.
func (r *Region) settleLocked() []func() {
	var fns []func()
	n := 0
	blocked := false
	for _, i := range r.pending {
		w := r.life.Load()
		pinsGone := r.transientGone(w, i.old)
		if pinsGone && i.pinsCh != nil {
			close(i.pinsCh)
			i.pinsCh = nil
		}
		if blocked || !pinsGone || r.legacy.Load() != 0 || r.leasesUpTo(w, i.old) || len(i.views) > 0 {
			blocked = true
			continue
		}
		i.done.Store(true)
		close(i.ch)
		fns = append(fns, i.fns...)
		i.fns = nil
		n++
	}
	if n > 0 {
		clear(r.pending[:n])
		r.pending = append(r.pending[:0], r.pending[n:]...)
	}
	if len(r.pending) == 0 {
		r.clearPending()
	}
	return fns
}

// clearPending clears the life word's pending bit. Called with mu held.
func (r *Region) clearPending() {
	for {
		w := r.life.Load()
		if w&pendingBit == 0 || r.life.CompareAndSwap(w, w&^pendingBit) {
			return
		}
	}
}

func runAll(fns []func()) {
	for _, f := range fns {
		f()
	}
}
