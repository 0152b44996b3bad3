package mem

import (
	"sync"
	"sync/atomic"
)

// Region is a registered memory region: a caller-owned []byte exposed under
// an STag, with a protection domain, access rights and a tagged-offset base.
//
// Concurrency: buf, base, pd and index never change after registration.
// Two words describe the registration (see doc.go, "The two words"):
// state holds the key, a valid bit and the access rights, read with one
// atomic load by every remote check; life holds a valid bit, the
// generation, a pending-invalidation bit and the transient pin counts of
// the current and the previous generation, so that Pin checks and pins in
// one compare-and-swap. Both change only under mu (Begin*), state before
// life. stale counts the transient pins of generations older than the
// previous one, legacy the pins of Acquire (which carry no generation).
// mu also guards the leases and the pending invalidations.
type Region struct {
	table *Table
	index uint32
	pd    uint32
	buf   []byte
	base  uint64

	state  atomic.Uint32 // key | validBit | access<<16
	life   atomic.Uint64 // see word.go
	stale  atomic.Int64  // transient pins of generations <= current-2
	legacy atomic.Int64  // pins of Acquire/Release

	mu        sync.Mutex
	pending   []*Invalidation    // undrained invalidations, oldest first
	leases    map[leaseKey]lease // outstanding leases by holder and generation
	leaseGens []genCount         // outstanding leases per generation, oldest first
	dead      bool               // deregistration has begun
	dereg     *Invalidation      // the deregistration, once begun
	finished  bool               // a blocking Deregister has finished the job

	// Memory windows (window.go). win is set on a window's table entry,
	// which is never valid itself; window and parent on a binding (a
	// window's view of its parent's bytes). None changes after creation.
	win    *Window
	window *Window
	parent *Region
	// views are the bindings of windows to this region that have not
	// drained since they were unbound. Guarded by mu.
	views map[*Region]struct{}
}

const validBit = 1 << 8

func packState(key uint8, valid bool, a Access) uint32 {
	s := uint32(key) | uint32(a)<<16
	if valid {
		s |= validBit
	}
	return s
}

// STag returns the region's current STag.
func (r *Region) STag() STag { return MakeSTag(r.index, uint8(r.state.Load())) }

// Base returns the tagged offset of the region's first byte: the TO a peer
// uses to address buf[0].
func (r *Region) Base() uint64 { return r.base }

// Len returns the region's length in bytes.
func (r *Region) Len() int { return len(r.buf) }

// PD returns the protection domain the region belongs to.
func (r *Region) PD() uint32 { return r.pd }

// Access returns the region's current access rights.
func (r *Region) Access() Access { return Access(r.state.Load() >> 16) }

// Valid reports whether the region's STag is currently valid.
func (r *Region) Valid() bool { return r.state.Load()&validBit != 0 }

// Bytes returns the registered buffer.
func (r *Region) Bytes() []byte { return r.buf }

// Window returns the memory window r is a binding of, or nil if r is a
// registered region. A binding is for remote access only: the engine must
// not use it as the buffer of a local work request.
func (r *Region) Window() *Window { return r.window }

// Parent returns the region a window's binding exposes bytes of, or nil if
// r is a registered region.
func (r *Region) Parent() *Region { return r.parent }

// check validates one access to [to, to+n) through stag against the state
// word s. It is the whole of the protection check (RFC 5040 §6.4): STag
// valid with the right key, same protection domain, access granted, no TO
// wrap, inside the region.
func (r *Region) check(s uint32, stag STag, pd uint32, need Access, to uint64, n uint64) Reason {
	if s&validBit == 0 || uint8(s) != stag.Key() {
		return InvalidSTag
	}
	if r.pd != pd {
		return NotAssociated
	}
	if Access(s>>16)&need != need {
		return AccessViolated
	}
	end := to + n
	if end < to {
		return TOWrap
	}
	if to < r.base || end-r.base > uint64(len(r.buf)) {
		return OutOfBounds
	}
	return OK
}

// Release ends a placement begun with Table.Acquire (or AcquireAtomic).
func (r *Region) Release() {
	switch v := r.legacy.Add(-1); {
	case v < 0:
		panic("memory region: Release without a matching Acquire")
	case v == 0 && r.life.Load()&pendingBit != 0:
		r.settle()
	}
}
