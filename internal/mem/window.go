package mem

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/goiwarp/iwarp/rdma"
)

// WindowType is a memory window's type: package rdma's.
type WindowType = rdma.WindowType

// The memory window types. See "Memory windows" in doc.go.
const (
	WindowType1 = rdma.WindowType1
	WindowType2 = rdma.WindowType2
)

// Errors of the memory window API.
var (
	ErrWindowType       = errors.New("memory window type must be 1 or 2")
	ErrWindowParent     = errors.New("a memory window binds to a registered region only")
	ErrWindowPD         = errors.New("memory window and region are in different protection domains")
	ErrWindowAccess     = errors.New("memory window rights must be remote read, write or atomic (and remote invalidate for type 2)")
	ErrWindowLocalWrite = errors.New("remote write or atomic through a memory window needs local write access on the region")
	ErrNoMWBind         = errors.New("region was not registered with memory window bind access")
	ErrWindowBounds     = errors.New("memory window does not lie within the region")
	ErrWindowEmpty      = errors.New("cannot bind a type 2 memory window of length 0")
	ErrWindowBound      = errors.New("type 2 memory window is bound: invalidate it before binding it again")
	ErrParentInvalid    = errors.New("region's STag is invalid: cannot bind a memory window to it")
	ErrDeallocated      = errors.New("memory window is deallocated")
	ErrWindowType1      = errors.New("a type 1 memory window cannot be invalidated: unbind it")
	ErrWindowRekey      = errors.New("a memory window's binding cannot be re-keyed: bind the window again")
	ErrWindowStale      = errors.New("not the current STag of the memory window")
)

// Window is a memory window (RFC 5040 §2, "Memory Window"): an STag of its
// own in the table, in a protection domain, that once bound exposes a range
// of a registered region (its parent) to the peer with rights of its own.
//
// Each bind creates a binding: a *Region that shares the parent's bytes
// (its buf is the window's range of the parent's buf, its base the
// window's first TO, in the parent's TO space) and has its own state and
// life words, pins, leases and generation. Remote checks and pins by the
// window's STag resolve to the current binding, so the engine handles a
// window's accesses with the same calls as a region's (Unpin, Lease,
// PinLeased, EndLease, Release and the atomics on the returned region).
// A binding lives for one bind only: the first Begin on it (unbind,
// rebind, invalidation, deallocation or a Begin on its parent) ends it for
// good, and its Invalidation drains once no byte moves through it.
//
// Concurrency: index, pd, typ and anchor never change; view and key are
// read with one atomic load; mu serialises binds, unbinds and
// deallocation.
type Window struct {
	table  *Table
	anchor *Region // the table entry: never valid, never pinned
	index  uint32
	pd     uint32
	typ    WindowType

	view atomic.Pointer[Region] // the current (or last) binding; nil before the first bind
	key  atomic.Uint32          // key of the window's current STag

	mu       sync.Mutex
	dead     bool          // deallocation has begun
	dealloc  *Invalidation // the deallocation's unbind, once begun
	finished bool          // a blocking DeallocWindow has finished the job
}

// STag returns the window's current STag: the one its last bind returned
// (valid while bound), or the one it was allocated with.
func (w *Window) STag() STag { return MakeSTag(w.index, uint8(w.key.Load())) }

// PD returns the protection domain the window belongs to.
func (w *Window) PD() uint32 { return w.pd }

// Type returns the window's type.
func (w *Window) Type() WindowType { return w.typ }

// Bound reports whether the window is bound: its current binding is valid.
func (w *Window) Bound() bool {
	v := w.view.Load()
	return v != nil && v.Valid()
}

// Deallocated reports whether the window's deallocation has begun.
func (w *Window) Deallocated() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dead
}

// Binding returns the window's current (or last) binding, valid or not, or
// nil if it was never bound.
func (w *Window) Binding() *Region { return w.view.Load() }

// AllocWindow allocates a memory window of the given type in protection
// domain pd (ibv_alloc_mw). It takes a table index and an STag with a
// random key like a registration, and is not bound: every access through
// its STag fails as an InvalidSTag until a bind.
func (t *Table) AllocWindow(pd uint32, typ WindowType) (*Window, error) {
	if typ != WindowType1 && typ != WindowType2 {
		return nil, ErrWindowType
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	index, err := t.newIndexLocked()
	if err != nil {
		return nil, err
	}
	w := &Window{table: t, index: index, pd: pd, typ: typ}
	w.key.Store(uint32(uint8(t.random())))
	w.anchor = &Region{table: t, index: index, pd: pd, win: w}
	t.store(index, w.anchor)
	t.windows++
	return w, nil
}

// windowAccess returns the rights a window of type typ may be bound with.
func windowAccess(typ WindowType) Access {
	a := AccessRemoteRead | AccessRemoteWrite | AccessRemoteAtomic
	if typ == WindowType2 {
		a |= AccessRemoteInvalidate
	}
	return a
}

// BeginBind binds w to length bytes of parent starting at tagged offset
// base (in parent's TO space: the peer addresses the window's bytes with
// the TOs it would use for the region) with the given rights, without
// waiting, and returns the window's new STag and the Invalidation of its
// previous binding (drained if there was none).
//
// The checks: w is allocated; parent is a registered region, not
// deregistered, currently valid, in w's protection domain and registered
// (or re-keyed) with AccessMWBind; [base, base+length) lies within it;
// access holds only AccessRemoteRead, AccessRemoteWrite,
// AccessRemoteAtomic (and AccessRemoteInvalidate for type 2); remote
// write or atomic rights need AccessLocalWrite on the parent (libibverbs'
// rule); atomic rights need an 8-byte aligned base and host address. The
// window's rights need not be among the parent's remote rights. A failed
// bind leaves the window as it was.
//
// Every bind gives the window a new random key (never the previous one):
// the old STag fails at once. A bound type 1 window is unbound first, as by
// BeginUnbind; a bound type 2 window is refused (ErrWindowBound: it must be
// invalidated first). A length of 0 unbinds a type 1 window (libibverbs'
// zero-length bind) and returns its STag, now invalid, and the unbind's
// Invalidation; a type 2 window refuses it (ErrWindowEmpty).
//
// For type 2 the engine calls BeginBindAt when the bind work request
// executes, in send-queue order.
func (t *Table) BeginBind(w *Window, parent *Region, base, length uint64, access Access) (STag, *Invalidation, error) {
	return t.beginBind(w, parent, base, length, access, 0, 0, false)
}

// BeginBindAt is BeginBind that also requires parent to be at generation
// gen and the window's current STag to be want (both checked under the
// mutexes, with the other checks): the bind of a work request whose SGE
// was resolved at post binds the registration the post saw, or fails with
// ErrParentInvalid if it was invalidated, re-keyed or deregistered since;
// and it binds the window it named, or fails with ErrWindowStale if the
// window was bound (or unbound by a bind) again since.
func (t *Table) BeginBindAt(w *Window, want STag, parent *Region, gen Gen, base, length uint64, access Access) (STag, *Invalidation, error) {
	return t.beginBind(w, parent, base, length, access, gen, want, true)
}

// LookupWindow returns the memory window whose table index is stag's,
// whatever stag's key, or nil if that index holds no window.
func (t *Table) LookupWindow(stag STag) *Window {
	r := t.lookup(stag.Index())
	if r == nil {
		return nil
	}
	return r.win
}

func (t *Table) beginBind(w *Window, parent *Region, base, length uint64, access Access, gen Gen, want STag, checkAt bool) (STag, *Invalidation, error) {
	if length == 0 {
		if w.typ != WindowType1 {
			return 0, nil, ErrWindowEmpty
		}
		w.mu.Lock()
		if w.dead {
			w.mu.Unlock()
			return 0, nil, ErrDeallocated
		}
		inv, fns := w.unbindLocked()
		w.mu.Unlock()
		runAll(fns)
		return w.STag(), inv, nil
	}
	if parent == nil || parent.win != nil || parent.window != nil || parent.table != t {
		return 0, nil, ErrWindowParent
	}
	if access&^windowAccess(w.typ) != 0 {
		return 0, nil, ErrWindowAccess
	}
	if parent.pd != w.pd {
		return 0, nil, ErrWindowPD
	}
	end := base + length
	if end < base {
		return 0, nil, ErrWindowBounds
	}

	parent.mu.Lock()
	if checkAt && parent.Gen() != gen {
		parent.mu.Unlock()
		return 0, nil, ErrParentInvalid
	}
	stag, old, fns, err := t.bindLocked(w, parent, base, end, access, want, checkAt)
	parent.mu.Unlock()
	// fns may lock parent.mu (a binding's detach): run them after.
	runAll(fns)
	return stag, old, err
}

// bindLocked is the part of BeginBind under parent.mu.
func (t *Table) bindLocked(w *Window, parent *Region, base, end uint64, access Access, want STag, checkKey bool) (STag, *Invalidation, []func(), error) {
	length := end - base
	if parent.dead {
		return 0, nil, nil, ErrDeregistered
	}
	s := parent.state.Load()
	if s&validBit == 0 {
		return 0, nil, nil, ErrParentInvalid
	}
	pa := Access(s >> 16)
	if pa&AccessMWBind == 0 {
		return 0, nil, nil, ErrNoMWBind
	}
	if access&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && pa&AccessLocalWrite == 0 {
		return 0, nil, nil, ErrWindowLocalWrite
	}
	if base < parent.base || end-parent.base > uint64(len(parent.buf)) {
		return 0, nil, nil, ErrWindowBounds
	}
	off := base - parent.base
	buf := parent.buf[off : off+length : off+length]
	if access&AccessRemoteAtomic != 0 && (base%8 != 0 || !aligned8(buf)) {
		return 0, nil, nil, ErrAtomicAligned
	}

	w.mu.Lock()
	if w.dead {
		w.mu.Unlock()
		return 0, nil, nil, ErrDeallocated
	}
	if checkKey && w.STag() != want {
		w.mu.Unlock()
		return 0, nil, nil, ErrWindowStale
	}
	var old *Invalidation
	var fns []func()
	if v := w.view.Load(); v == nil {
		old = drained(w.anchor, 0)
	} else {
		v.mu.Lock()
		if !v.dead {
			if w.typ == WindowType2 {
				v.mu.Unlock()
				w.mu.Unlock()
				return 0, nil, nil, ErrWindowBound
			}
			old, fns = v.beginLocked(beginDeregister, 0)
		} else {
			old = v.latestLocked()
		}
		v.mu.Unlock()
	}
	key := uint8(t.random())
	if key == uint8(w.key.Load()) {
		key++
	}
	v := &Region{table: t, index: w.index, pd: w.pd, buf: buf, base: base, window: w, parent: parent}
	v.state.Store(packState(key, true, access))
	v.life.Store(liveBit)
	if parent.views == nil {
		parent.views = make(map[*Region]struct{})
	}
	parent.views[v] = struct{}{}
	w.key.Store(uint32(key))
	w.view.Store(v)
	w.mu.Unlock()
	return MakeSTag(w.index, key), old, fns, nil
}

// Bind is BeginBind without waiting for the previous binding's drain (as
// Rekey is BeginRekey): it returns the window's new STag.
func (t *Table) Bind(w *Window, parent *Region, base, length uint64, access Access) (STag, error) {
	s, _, err := t.BeginBind(w, parent, base, length, access)
	return s, err
}

// BindContext is BeginBind, then waits like Invalidate (with the same end
// when ctx ends) until no pin or lease of the previous binding remains:
// when it returns nil, no byte moves through the old binding any more.
func (t *Table) BindContext(ctx context.Context, w *Window, parent *Region, base, length uint64, access Access) (STag, error) {
	s, inv, err := t.BeginBind(w, parent, base, length, access)
	if err != nil {
		return 0, err
	}
	_, err = inv.complete(ctx, "bind")
	return s, err
}

// unbindLocked ends w's current binding, if it is valid, and returns the
// Invalidation to wait for: the unbind's, the pending one of an earlier
// unbind of the same binding, or a drained one. Called with w.mu held; the
// caller runs the returned functions after unlocking it.
func (w *Window) unbindLocked() (*Invalidation, []func()) {
	v := w.view.Load()
	if v == nil {
		return drained(w.anchor, 0), nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dead {
		return v.latestLocked(), nil
	}
	return v.beginLocked(beginDeregister, 0)
}

// BeginUnbind unbinds w without waiting (whatever its type: for type 2 it
// is a Local Invalidate that needs no STag): the window's STag fails at
// once, and the Invalidation reports when no pin or lease taken through the
// binding remains. Unbinding an unbound window returns the pending
// Invalidation of its last unbind, or a drained one; a deallocated window
// returns its deallocation's.
func (t *Table) BeginUnbind(w *Window) *Invalidation {
	w.mu.Lock()
	if w.dead {
		inv := w.dealloc
		w.mu.Unlock()
		return inv
	}
	inv, fns := w.unbindLocked()
	w.mu.Unlock()
	runAll(fns)
	return inv
}

// Unbind is BeginUnbind, then waits like Invalidate (with the same end when
// ctx ends): when it returns nil, no byte moves through the window any
// more. On a deallocated window it waits for the deallocation's drain the
// same way and then returns ErrDeallocated.
func (t *Table) Unbind(ctx context.Context, w *Window) error {
	w.mu.Lock()
	dead := w.dead
	w.mu.Unlock()
	_, err := t.BeginUnbind(w).complete(ctx, "unbind")
	if err == nil && dead {
		return ErrDeallocated
	}
	return err
}

// BeginDealloc deallocates w without waiting (ibv_dealloc_mw): it unbinds
// the window, takes it out of the table (its index is quarantined like a
// deregistered region's) and returns the unbind's Invalidation. Called
// again, it returns the same Invalidation.
func (t *Table) BeginDealloc(w *Window) *Invalidation {
	w.mu.Lock()
	if w.dead {
		inv := w.dealloc
		w.mu.Unlock()
		return inv
	}
	w.dead = true
	inv, fns := w.unbindLocked()
	w.dealloc = inv
	w.mu.Unlock()
	t.remove(w.anchor)
	runAll(fns)
	return inv
}

// DeallocWindow deallocates w (BeginDealloc) and waits like Deregister,
// with the same end when ctx ends, until no byte moves through the window.
// A later call returns ErrDeallocated once a call has finished the job.
func (t *Table) DeallocWindow(ctx context.Context, w *Window) error {
	w.mu.Lock()
	finished := w.finished
	w.mu.Unlock()
	if finished {
		return ErrDeallocated
	}
	done, err := t.BeginDealloc(w).complete(ctx, "deallocation")
	if done {
		w.mu.Lock()
		w.finished = true
		w.mu.Unlock()
	}
	return err
}

// check is Table.Check for the window's STag: the current binding's
// checks, and the parent valid.
func (w *Window) check(stag STag, pd uint32, need Access, to, n uint64) (*Region, Reason) {
	v := w.view.Load()
	if v == nil {
		return nil, InvalidSTag
	}
	if why := v.checkView(stag, pd, need, to, n); why != OK {
		return nil, why
	}
	return v, OK
}

// pinRemote is Table.PinRemote for the window's STag: the pin is on the
// current binding, taken before the checks as for a region. A binding is
// unbound (its first Begin) before its parent's Begin returns, so a pin
// whose check passed is one the binding's unbind waits for, and the
// parent's Invalidation waits for that unbind.
func (w *Window) pinRemote(stag STag, pd uint32, need Access, to, n uint64) ([]byte, *Region, Gen, Reason) {
	v := w.view.Load()
	if v == nil {
		return nil, nil, 0, InvalidSTag
	}
	g, ok := v.pinCurrent()
	if !ok {
		return nil, nil, 0, InvalidSTag
	}
	if why := v.checkView(stag, pd, need, to, n); why != OK {
		v.Unpin(g)
		return nil, nil, 0, why
	}
	off := to - v.base
	return v.buf[off : off+n : off+n], v, g, OK
}

// acquire is Table.Acquire for the window's STag: the pin of Acquire is on
// the current binding.
func (w *Window) acquire(stag STag, pd uint32, need Access, to, n uint64) ([]byte, *Region, Reason) {
	v := w.view.Load()
	if v == nil {
		return nil, nil, InvalidSTag
	}
	v.legacy.Add(1)
	if why := v.checkView(stag, pd, need, to, n); why != OK {
		v.Release()
		return nil, nil, why
	}
	off := to - v.base
	return v.buf[off : off+n : off+n], v, OK
}

// checkView is the protection check of an access through the binding v:
// the parent valid (an invalid parent is an InvalidSTag), then the
// region check on the binding's state word (key, validity, protection
// domain, the window's rights, TO wrap, the window's bounds).
func (v *Region) checkView(stag STag, pd uint32, need Access, to, n uint64) Reason {
	s := v.state.Load()
	if v.parent.state.Load()&validBit == 0 {
		return InvalidSTag
	}
	return v.check(s, stag, pd, need, to, n)
}

// checkInvalidate is Table.checkInvalidate for the window's STag.
func (w *Window) checkInvalidate(stag STag, pd uint32, remote bool) (*Region, InvalidateReason) {
	v := w.view.Load()
	if v == nil {
		return nil, InvalidateUnknown
	}
	s := v.state.Load()
	if s&validBit == 0 || uint8(s) != stag.Key() {
		return nil, InvalidateUnknown
	}
	if v.pd != pd {
		return nil, InvalidateOtherPD
	}
	if w.typ == WindowType1 || remote && Access(s>>16)&AccessRemoteInvalidate == 0 {
		return nil, InvalidateNotAllowed
	}
	return v, InvalidateOK
}

// unbindViewsLocked ends every binding of a window to r that is still valid
// and makes inv (r's Begin in progress) wait for the unbind of every
// binding that has not drained, so that r's drain covers the accesses
// through its windows. Called with r.mu held, from the Begin's step 3; the
// caller runs the returned functions after unlocking r.mu.
func (r *Region) unbindViewsLocked(inv *Invalidation) []func() {
	var fns []func()
	for v := range r.views {
		v.mu.Lock()
		var vi *Invalidation
		if v.dead {
			vi = v.dereg
		} else {
			var f []func()
			vi, f = v.beginLocked(beginDeregister, 0)
			fns = append(fns, f...)
		}
		done := vi.done.Load()
		v.mu.Unlock()
		if !done {
			// v's detach runs after vi drained and takes r.mu: it finds inv
			// in r.pending and takes vi off inv.views.
			inv.views = append(inv.views, vi)
		}
	}
	return fns
}

// detach runs when the unbind vi of the binding v has drained: v leaves
// its parent's bindings and the parent's pending invalidations stop waiting
// for it.
func (v *Region) detach(vi *Invalidation) {
	p := v.parent
	p.mu.Lock()
	delete(p.views, v)
	found := false
	for _, i := range p.pending {
		for k, x := range i.views {
			if x == vi {
				i.views = append(i.views[:k], i.views[k+1:]...)
				found = true
				break
			}
		}
	}
	var fns []func()
	if found {
		fns = p.settleLocked()
	}
	p.mu.Unlock()
	runAll(fns)
}
