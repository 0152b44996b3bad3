package rdmap

import "github.com/goiwarp/iwarp/internal/mem"

// Memory rules (docs/engine-rebuild.md, "Memory: transient pins, leases,
// generations"): a posted WR holds (region, generation) pairs and no pin;
// every byte moved into or out of registered memory moves under a
// transient pin taken for that move only, or, for outbound bytes handed
// to the Encoder by reference, under a lease held until the Encoder
// consumed them. A pin or lease fails once the region was invalidated,
// deregistered or re-keyed after the WR was posted: the WR then completes
// with rdma.StatusLocalProtection and touches nothing.

// copyFromSGL copies the SGL's bytes into dst (post time), each SGE under a
// transient pin at the generation the post recorded (gens[i], read before
// the key was compared): an old key never copies bytes written after a
// re-key. It reports false if a region is no longer valid at it.
func copyFromSGL(dst []byte, sgl []Seg, gens []mem.Gen) bool {
	off := 0
	for i := range sgl {
		s := &sgl[i]
		g := gens[i]
		if !s.Region.Pin(g) {
			return false
		}
		off += copy(dst[off:], s.bytes())
		s.Region.Unpin(g)
	}
	return true
}

// scatter copies src into the SGL at message offset mo, each SGE under a
// transient pin at its recorded generation. It reports false (having
// copied into the SGEs before the failing one only) if a region is no
// longer valid at it; the caller checked that src fits.
func scatter(sgl []Seg, gens []mem.Gen, mo uint64, src []byte) bool {
	for i := range sgl {
		if len(src) == 0 {
			break
		}
		s := &sgl[i]
		if mo >= uint64(s.Len) {
			mo -= uint64(s.Len)
			continue
		}
		if !s.Region.Pin(gens[i]) {
			return false
		}
		k := copy(s.bytes()[mo:], src)
		s.Region.Unpin(gens[i])
		src = src[k:]
		mo = 0
	}
	return true
}

// sglFits reports whether n bytes at message offset mo fit in the SGL.
func sglFits(sgl []Seg, mo, n uint64) bool {
	total := sglLen(sgl)
	return mo <= total && n <= total-mo
}

// sglLen returns the SGL's total length.
func sglLen(sgl []Seg) uint64 {
	var total uint64
	for i := range sgl {
		total += uint64(sgl[i].Len)
	}
	return total
}

// firstOf reports whether SGE i is the first of the SGL with its (region,
// generation): leases are taken once per distinct pair.
func firstOf(sgl []Seg, gens []mem.Gen, i int) bool {
	for j := 0; j < i; j++ {
		if sgl[j].Region == sgl[i].Region && gens[j] == gens[i] {
			return false
		}
	}
	return true
}

// within reports whether b starts inside dst (b is a subslice of dst).
func within(b, dst []byte) bool {
	if len(b) == 0 || len(dst) == 0 {
		return false
	}
	k := cap(dst) - cap(b)
	return k >= 0 && k < len(dst) && &dst[k] == &b[0]
}
