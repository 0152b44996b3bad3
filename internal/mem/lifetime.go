package mem

import (
	"context"
	"fmt"
)

// beginLocked runs a Begin of the given kind. Called with r.mu held; the
// caller runs the returned functions after unlocking it.
func (r *Region) beginLocked(kind beginKind, next uint32) (*Invalidation, []func()) {
	b := beginOp{r: r, kind: kind, next: next}
	inv := b.run()
	return inv, b.fns
}

// latestLocked returns what a Begin with nothing to do hands out: the most
// recent pending invalidation (the STag's users may still be draining from
// it), the deregistration of a deregistered region, or an Invalidation that
// has drained already. Called with r.mu held.
func (r *Region) latestLocked() *Invalidation {
	if n := len(r.pending); n > 0 {
		return r.pending[n-1]
	}
	if r.dereg != nil {
		return r.dereg
	}
	return drained(r, (genOf(r.life.Load())-1)&genMask)
}

// BeginInvalidate invalidates stag (a remote invalidation, RFC 5040 §5.3
// and §6.2, or a Local Invalidate) without waiting: if stag is still r's
// current valid STag, the valid bit clears and the generation moves on at
// once, and the Invalidation reports when the old generation's pins and
// leases are gone. The caller has checked the request
// (CheckRemoteInvalidate, CheckLocalInvalidate). If stag is no longer r's
// valid STag (a re-key or another invalidation came in between and wins)
// there is nothing to do: it returns InvalidateUnknown and the most recent
// invalidation still pending (so that its drain is still waited for), or
// one that has drained.
//
// r may be the binding of a type 2 memory window (CheckLocalInvalidate and
// CheckRemoteInvalidate return one for a window's STag): the window is
// then unbound. A type 1 window's binding cannot be invalidated: it
// returns InvalidateNotAllowed and the most recent invalidation, as for an
// STag that is no longer current.
func (t *Table) BeginInvalidate(r *Region, stag STag) (*Invalidation, InvalidateReason) {
	r.mu.Lock()
	if r.window != nil && r.window.typ == WindowType1 {
		inv := r.latestLocked()
		r.mu.Unlock()
		return inv, InvalidateNotAllowed
	}
	s := r.state.Load()
	if r.dead || s&validBit == 0 || uint8(s) != stag.Key() || stag.Index() != r.index {
		inv := r.latestLocked()
		r.mu.Unlock()
		return inv, InvalidateUnknown
	}
	inv, fns := r.beginLocked(beginInvalidate, 0)
	r.mu.Unlock()
	runAll(fns)
	return inv, InvalidateOK
}

// beginInvalidateAny invalidates r whatever its key (Invalidate). On a
// region already invalid it moves to the next generation all the same,
// which makes its Invalidation wait for every earlier pin and lease.
func (t *Table) beginInvalidateAny(r *Region) *Invalidation {
	r.mu.Lock()
	if r.dead {
		inv := r.dereg
		r.mu.Unlock()
		return inv
	}
	inv, fns := r.beginLocked(beginInvalidate, 0)
	r.mu.Unlock()
	runAll(fns)
	return inv
}

// BeginDeregister deregisters r without waiting: the STag fails at once for
// new arrivals, r leaves the table (its index is quarantined), the valid bit
// clears and the generation moves on for good, and the Invalidation reports
// when the old generation's pins and leases are gone: only then may the
// caller reuse the buffer. Called again, it returns the same Invalidation.
//
// Every memory window bound to r is unbound at once, and the Invalidation
// drains only once no byte moves through those windows either. On a
// window's binding, BeginDeregister unbinds the window (whatever its type);
// the window stays allocated.
func (t *Table) BeginDeregister(r *Region) *Invalidation {
	r.mu.Lock()
	if r.dead {
		inv := r.dereg
		r.mu.Unlock()
		return inv
	}
	r.dead = true
	inv, fns := r.beginLocked(beginDeregister, 0)
	r.dereg = inv
	r.mu.Unlock()
	t.remove(r)
	runAll(fns)
	return inv
}

// remove takes r out of the table and quarantines its index.
func (t *Table) remove(r *Region) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lookup(r.index) != r {
		return
	}
	t.store(r.index, nil)
	if r.win != nil {
		t.windows--
	} else {
		t.count--
	}
	if len(t.quarantine) < Quarantine {
		t.quarantine = append(t.quarantine, r.index)
	} else {
		delete(t.qset, t.quarantine[t.qnext])
		t.quarantine[t.qnext] = r.index
		t.qnext = (t.qnext + 1) % Quarantine
	}
	t.qset[r.index] = true
}

// BeginRekey gives r a new random key and access rights and makes it valid
// at the next generation at once, as a fast-register does (the semantics of
// Rekey): the old STag fails at once for new arrivals and posted WRs of the
// old generation can no longer pin. It returns the new STag and the
// Invalidation of the old generation, which reports when its pins and
// leases are gone. (The contract's BeginRekey(r) had no access rights and
// no STag to return; Rekey needs both.)
//
// A memory window's binding cannot be re-keyed (ErrWindowRekey): the window
// is bound again instead (BeginBind).
func (t *Table) BeginRekey(r *Region, access Access) (STag, *Invalidation, error) {
	if r.window != nil {
		return 0, nil, ErrWindowRekey
	}
	if access&^accessAll != 0 {
		return 0, nil, ErrBadAccess
	}
	if access&AccessRemoteAtomic != 0 && (r.base%8 != 0 || !aligned8(r.buf)) {
		return 0, nil, ErrAtomicAligned
	}
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		return 0, nil, ErrDeregistered
	}
	key := uint8(t.random())
	if key == uint8(r.state.Load()) {
		key++
	}
	inv, fns := r.beginLocked(beginRekey, packState(key, true, access))
	r.mu.Unlock()
	runAll(fns)
	return MakeSTag(r.index, key), inv, nil
}

// Deregister deregisters r (BeginDeregister) and waits until no pin or
// lease of the registration remains: when it returns nil no byte can be
// placed into or read from r's buffer any more. If ctx ends first, it
// revokes the holders of leases (Invalidation.Revoke), waits for the
// transient pins only (they involve no peer) and returns a *RevokedError
// that matches ctx's error (errors.Is) and says how many holders were
// revoked; the registration is gone either way and a later call returns
// ErrDeregistered. While pins of Acquire are held (they may wait on the
// peer) it does not wait for them past ctx: the error says so and a later
// call finishes the job.
func (t *Table) Deregister(ctx context.Context, r *Region) error {
	r.mu.Lock()
	finished := r.finished
	r.mu.Unlock()
	if finished {
		return ErrDeregistered
	}
	done, err := t.BeginDeregister(r).complete(ctx, "deregistration")
	if done {
		r.mu.Lock()
		r.finished = true
		r.mu.Unlock()
	}
	return err
}

// Invalidate makes r's STag invalid for new arrivals at once (RFC 5040
// §6.2, local or remote invalidation), whatever its key, and waits like
// Deregister (with the same end when ctx ends) until no pin or lease of the
// old generation remains. The region stays registered and can be
// re-validated with a new key by Rekey. On a type 2 memory window's binding
// it unbinds the window; a type 1 window's binding cannot be invalidated
// (ErrWindowType1: unbind the window).
func (t *Table) Invalidate(ctx context.Context, r *Region) error {
	if r.window != nil && r.window.typ == WindowType1 {
		return ErrWindowType1
	}
	_, err := t.beginInvalidateAny(r).complete(ctx, "invalidation")
	return err
}

// InvalidateSTag makes stag invalid at once for new arrivals, if it is
// still r's current STag (a re-key in between wins), and waits like
// Invalidate until no pin or lease of the old generation (or, if there was
// nothing to invalidate, of the invalidation still pending) remains. Like
// Invalidate, it refuses a type 1 memory window's binding (ErrWindowType1).
func (t *Table) InvalidateSTag(ctx context.Context, r *Region, stag STag) error {
	if r.window != nil && r.window.typ == WindowType1 {
		return ErrWindowType1
	}
	inv, _ := t.BeginInvalidate(r, stag)
	_, err := inv.complete(ctx, "invalidation")
	return err
}

// Rekey gives r a new random key (and access rights) and makes it valid, as
// a fast-register does: the old STag fails at once for new arrivals. It
// returns the new STag without waiting for the old generation's pins and
// leases (BeginRekey; RekeyContext waits).
func (t *Table) Rekey(r *Region, access Access) (STag, error) {
	s, _, err := t.BeginRekey(r, access)
	return s, err
}

// RekeyContext is Rekey, then waits like Invalidate (with the same end when
// ctx ends) until no pin or lease of the old generation remains: when it
// returns nil, no byte moves through the old registration any more.
func (t *Table) RekeyContext(ctx context.Context, r *Region, access Access) (STag, error) {
	s, inv, err := t.BeginRekey(r, access)
	if err != nil {
		return 0, err
	}
	_, err = inv.complete(ctx, "re-key")
	return s, err
}

// complete waits for the Invalidation as the blocking calls do and reports
// whether the job is done (no transient pin of the old registration left).
func (i *Invalidation) complete(ctx context.Context, what string) (bool, error) {
	err := i.Wait(ctx)
	if err == nil {
		return true, nil
	}
	leases := i.Leases()
	n := i.Revoke()
	if i.inUse() {
		return false, &RevokedError{What: what, Holders: n, Err: err, InUse: true}
	}
	i.waitPins()
	if !leases {
		return true, nil
	}
	return true, &RevokedError{What: what, Holders: n, Err: err}
}

// RevokedError is what Deregister, Invalidate, InvalidateSTag and
// RekeyContext return when their context ended before the memory's users
// were gone. It matches the context's error with errors.Is.
type RevokedError struct {
	What    string // "deregistration", "invalidation", "re-key", "unbind", "bind" or "deallocation"
	Holders int    // how many lease holders were revoked (their connections fail)
	Err     error  // the context's error
	InUse   bool   // pins of Acquire were still held: the call did not finish
}

// Error says what ended, why, and what was revoked.
func (e *RevokedError) Error() string {
	if e.InUse {
		return fmt.Sprintf("%s: %v: the memory is still in use (revoked %d holder(s)); call again to finish", e.What, e.Err, e.Holders)
	}
	return fmt.Sprintf("%s: %v: revoked %d holder(s) still using the memory", e.What, e.Err, e.Holders)
}

// Unwrap returns the context's error.
func (e *RevokedError) Unwrap() error { return e.Err }
