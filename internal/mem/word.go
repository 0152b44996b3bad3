package mem

// The life word of a Region (one uint64, changed only by compare-and-swap):
//
//	bit 63      live: the registration is valid at the generation below
//	bit 62      pending: an invalidation waits for its drain (Unpin of an
//	            old generation's last pin must settle it)
//	bits 38-61  the generation, 24 bits, counting modulo 2^24
//	bits 19-37  transient pins of the odd generation (slot 1)
//	bits 0-18   transient pins of the even generation (slot 0)
//
// A pin of generation g is counted in slot g&1 while g is the current or
// the previous generation. When a Begin moves the generation from g to g+1,
// the slot of g+1 still holds the pins of g-1 (if any are left): Begin adds
// them to Region.stale first and then, in the compare-and-swap that
// advances the generation, empties the slot. An Unpin of a generation two
// or more behind the current one therefore decrements stale. stale may
// count a little too much while a Begin retries its compare-and-swap, never
// too little, so a drain it delays is never declared early.
const (
	pinBits    = 19
	pinMax     = 1<<pinBits - 1
	genShift   = 2 * pinBits
	genBits    = 24
	genMask    = 1<<genBits - 1
	pendingBit = uint64(1) << 62
	liveBit    = uint64(1) << 63
)

// Gen is a registration's generation: it changes whenever the region's
// STag is invalidated (local or remote invalidation), re-keyed or
// deregistered. A posted WR records (region, gen); its buffers may be used
// only while the region is valid and still at that generation. Generations
// count modulo 2^24 (see doc.go).
type Gen uint32

func genOf(w uint64) Gen { return Gen(w>>genShift) & genMask }

// age is how many generations g is behind the word's, modulo 2^24.
func age(w uint64, g Gen) Gen { return (genOf(w) - g) & genMask }

func slotShift(g Gen) uint { return uint(g&1) * pinBits }

func slotPins(w uint64, g Gen) uint64 { return w >> slotShift(g) & pinMax }

// Gen returns the region's current generation.
func (r *Region) Gen() Gen { return genOf(r.life.Load()) }

// Pin takes a transient pin: it checks validity and generation and pins in
// one compare-and-swap on the life word, so checking and pinning cannot race
// with invalidation. It fails (false) if the region is invalid or at another
// generation. A transient pin is held only while bytes move between memory
// and a socket or a copy: never across a wait on the peer. It panics if
// 2^19-1 pins of one generation are already held (a pin leak).
func (r *Region) Pin(g Gen) bool {
	sh := slotShift(g)
	for {
		w := r.life.Load()
		if w&liveBit == 0 || genOf(w) != g {
			return false
		}
		if w>>sh&pinMax == pinMax {
			panic(errTooManyPins)
		}
		if r.life.CompareAndSwap(w, w+1<<sh) {
			return true
		}
	}
}

// pinCurrent pins the current generation if the region is valid and returns
// it: the first half of PinRemote.
func (r *Region) pinCurrent() (Gen, bool) {
	for {
		w := r.life.Load()
		if w&liveBit == 0 {
			return 0, false
		}
		g := genOf(w)
		sh := slotShift(g)
		if w>>sh&pinMax == pinMax {
			panic(errTooManyPins)
		}
		if r.life.CompareAndSwap(w, w+1<<sh) {
			return g, true
		}
	}
}

// Unpin ends a transient pin of generation g (taken by Pin, PinRemote or
// PinLeased). Pins are counted per generation (two slots, by parity); the
// Unpin that drops the last pin an invalidation waits for runs its drain
// (OnDrained functions, Wait wake-ups) on the calling goroutine.
func (r *Region) Unpin(g Gen) {
	if r.unpin(g) {
		r.settle()
	}
}

// unpin drops one pin of generation g and reports whether a pending
// invalidation may have drained by it (the caller then settles).
func (r *Region) unpin(g Gen) bool {
	sh := slotShift(g)
	for {
		w := r.life.Load()
		a := age(w, g)
		if a > 1 {
			// The pin was moved to stale by the Begin that left g+1.
			v := r.stale.Add(-1)
			if v < 0 {
				panic(errUnpin)
			}
			return v == 0
		}
		if w>>sh&pinMax == 0 {
			panic(errUnpin)
		}
		nw := w - 1<<sh
		if r.life.CompareAndSwap(w, nw) {
			return a == 1 && nw&pendingBit != 0 && nw>>sh&pinMax == 0
		}
	}
}

// PinRemote validates a remote access exactly as Table.Acquire does (same
// Reasons) and takes a transient pin on success, atomically with the check;
// it returns the bytes, the region and the generation pinned (Unpin with
// it).
//
// The pin is taken first (one compare-and-swap on the life word, which must
// be live), then the state word is loaded and checked. A Begin clears the
// state word's valid bit before it advances the generation and publishes a
// new key after, so a check that passes with a key either ran before the
// Begin that ends the pinned generation (the pin is then one that Begin's
// drain waits for) or saw the key of a later generation (the pin of an
// older generation then only makes that drain wait a little longer). A
// pin of generation g never passes with a key from before g.
//
// For a memory window's STag, the pin is on the window's current binding
// (returned as the region, with its generation): see "Memory windows" in
// doc.go.
func (t *Table) PinRemote(stag STag, pd uint32, need Access, to, n uint64) ([]byte, *Region, Gen, Reason) {
	r := t.lookup(stag.Index())
	if r == nil {
		return nil, nil, 0, InvalidSTag
	}
	g, ok := r.pinCurrent()
	if !ok {
		// A window's table entry is never live: its pin fails here, so
		// the region path pays nothing for windows.
		if r.win != nil {
			return r.win.pinRemote(stag, pd, need, to, n)
		}
		return nil, nil, 0, InvalidSTag
	}
	if why := r.check(r.state.Load(), stag, pd, need, to, n); why != OK {
		r.Unpin(g)
		return nil, nil, 0, why
	}
	off := to - r.base
	return r.buf[off : off+n : off+n], r, g, OK
}

// Misuse of the pin and lease calls is a bug in the caller: it panics.
const (
	errTooManyPins = "memory region: 2^19-1 transient pins of one generation held at once (a pin leak?)"
	errUnpin       = "memory region: Unpin without a matching pin"
	errEndLease    = "memory region: EndLease without a matching Lease"
)
