package mem

// beginKind says what a Begin does to the registration.
type beginKind uint8

const (
	beginInvalidate beginKind = iota // invalid at the next generation
	beginDeregister                  // invalid at the next generation, for good
	beginRekey                       // valid at the next generation with a new key
)

// beginOp is a Begin in progress, written as a sequence of single atomic
// steps so that a test can interleave them with pins and unpins one by one;
// production runs them back to back with r.mu held.
type beginOp struct {
	r     *Region
	kind  beginKind
	next  uint32 // beginRekey: the new state word
	step  uint8
	w     uint64 // the life word the pre-count step loaded
	moved int64  // pins of the generation before the old one, pre-counted into stale
	inv   *Invalidation
	fns   []func() // OnDrained functions the final settle collected
}

// run runs every step. Called with r.mu held; the caller runs b.fns after
// unlocking it.
func (b *beginOp) run() *Invalidation {
	for !b.stepOnce() {
	}
	return b.inv
}

// stepOnce runs the next atomic step and reports whether the Begin is
// complete. The order is the argument of PinRemote's doc comment: the state
// word's valid bit is cleared before the generation moves, and a re-key's
// new key is published after.
func (b *beginOp) stepOnce() bool {
	r := b.r
	switch b.step {
	case 0:
		// No remote check passes with the old key from here on.
		r.state.Store(r.state.Load() &^ validBit)
		b.step = 1
	case 1:
		// The slot the next generation will use may still hold pins of the
		// generation before the old one: count them into stale before the
		// compare-and-swap empties the slot, so that stale never counts too
		// little.
		b.w = r.life.Load()
		b.moved = int64(slotPins(b.w, genOf(b.w)+1))
		if b.moved > 0 {
			r.stale.Add(b.moved)
		}
		b.step = 2
	case 2:
		w := b.w
		old := genOf(w)
		next := (old + 1) & genMask
		nw := w&^(pinMax<<slotShift(next))&^(genMask<<genShift) | uint64(next)<<genShift | pendingBit
		if b.kind == beginRekey {
			nw |= liveBit
		} else {
			nw &^= liveBit
		}
		if !r.life.CompareAndSwap(w, nw) {
			// A pin or unpin came in between: undo the pre-count, retry.
			if b.moved > 0 {
				r.stale.Add(-b.moved)
			}
			b.step = 1
			return false
		}
		b.inv = &Invalidation{r: r, old: old, ch: make(chan struct{})}
		r.pending = append(r.pending, b.inv)
		b.step = 3
	case 3:
		if r.parent != nil {
			// A window's binding: its first Begin ends it for good, and
			// once drained it leaves its parent (window.go).
			inv := b.inv
			r.dead, r.dereg = true, inv
			inv.fns = append(inv.fns, func() { r.detach(inv) })
		} else if len(r.views) > 0 {
			// A region with windows bound: unbind them before a re-key's new
			// key is published, and make this Invalidation wait for them.
			b.fns = append(b.fns, r.unbindViewsLocked(b.inv)...)
		}
		if b.kind == beginRekey {
			r.state.Store(b.next)
		}
		b.step = 4
	default:
		// Nothing may be pinned at all: drain at once.
		b.fns = append(b.fns, r.settleLocked()...)
		return true
	}
	return false
}
