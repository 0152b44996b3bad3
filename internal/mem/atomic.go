package mem

import (
	"sync/atomic"
	"unsafe"
)

// aligned8 reports whether buf's first byte sits at an 8-byte aligned host
// address, so that 64-bit atomics on it are real hardware atomics.
func aligned8(buf []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%8 == 0
}

// FetchAddMasked returns v + add computed per field as RFC 7306 §5.1.1
// specifies: a bit set in mask marks the most significant bit of a field and
// discards the carry out of it. mask 0 is the plain 64-bit add.
func FetchAddMasked(v, add, mask uint64) uint64 {
	// Add with the field-top bits cleared so no carry crosses a field, then
	// put the top bits back as the xor of both operands and the carry in.
	return ((v &^ mask) + (add &^ mask)) ^ ((v ^ add) & mask)
}

// CmpSwapMasked returns the value CmpSwap leaves at a target holding v
// (RFC 7306 §5.1.2): if v and compare agree on the bits of compareMask, the
// bits of swapMask are taken from swap; otherwise v is unchanged.
func CmpSwapMasked(v, compare, compareMask, swap, swapMask uint64) uint64 {
	if (v^compare)&compareMask != 0 {
		return v
	}
	return v&^swapMask | swap&swapMask
}

// word returns the aligned 64-bit word at tagged offset to. The caller has
// checked bounds and alignment.
func (r *Region) word(to uint64) *uint64 {
	return (*uint64)(unsafe.Pointer(&r.buf[to-r.base]))
}

// AtomicFetchAdd performs a masked FetchAdd on the 8 bytes at to, atomically
// with respect to every other atomic on the device's registered memory
// (remote atomics from any QP and the local accessors). It returns the
// original value. The region must have been checked for the access.
func (r *Region) AtomicFetchAdd(to uint64, add, mask uint64) uint64 {
	p := r.word(to)
	if mask == 0 {
		return atomic.AddUint64(p, add) - add
	}
	for {
		v := atomic.LoadUint64(p)
		if atomic.CompareAndSwapUint64(p, v, FetchAddMasked(v, add, mask)) {
			return v
		}
	}
}

// AtomicCmpSwap performs a masked CmpSwap on the 8 bytes at to, atomically
// like AtomicFetchAdd, and returns the original value.
func (r *Region) AtomicCmpSwap(to uint64, compare, compareMask, swap, swapMask uint64) uint64 {
	p := r.word(to)
	for {
		v := atomic.LoadUint64(p)
		nv := CmpSwapMasked(v, compare, compareMask, swap, swapMask)
		if nv == v || atomic.CompareAndSwapUint64(p, v, nv) {
			return v
		}
	}
}

// AcquireAtomic validates an RFC 7306 atomic's target, the usual protection
// checks for 8 bytes with remote-atomic access plus 64-bit alignment of the TO
// (and so of the host address, which registration or the window's bind
// guaranteed), and pins the region like Acquire. The caller runs the atomic and then calls Release.
func (t *Table) AcquireAtomic(stag STag, pd uint32, to uint64) (*Region, Reason) {
	_, r, why := t.Acquire(stag, pd, AccessRemoteAtomic, to, 8)
	if why != OK {
		return nil, why
	}
	if to%8 != 0 {
		r.Release()
		return nil, Misaligned
	}
	return r, OK
}

// LocalWord checks that the 8 bytes at tagged offset to are inside r and
// aligned, for the local atomic accessors of the public API. A memory
// window's binding is never used locally: it reports false.
func (r *Region) LocalWord(to uint64) bool {
	return r.window == nil && to%8 == 0 && to >= r.base && to-r.base <= uint64(len(r.buf)) && uint64(len(r.buf))-(to-r.base) >= 8 && aligned8(r.buf)
}

// AtomicLoad loads the 8 bytes at to atomically. The caller checked LocalWord.
func (r *Region) AtomicLoad(to uint64) uint64 { return atomic.LoadUint64(r.word(to)) }
