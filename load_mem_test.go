package iwarp_test

// Memory helpers of the load and real-network tests: byte patterns derived
// from a QP index, a sequence number and a kind (so that a misplaced,
// stale or shifted byte is caught), and buffers with canary zones around
// the registered part (so that a stray placement is caught).

// loadCanary is the byte value of the guard zones.
const loadCanary = 0xA5

// guarded is a buffer with canary zones of guard bytes on both sides of the
// part that gets registered; the part is 8-byte aligned (atomics need it).
type guarded struct {
	all   []byte
	guard int
}

// newGuarded returns n usable bytes with guard canary bytes either side.
func newGuarded(n, guard int) *guarded {
	guard = (guard + 7) &^ 7
	all := alignedBuf(n + 2*guard)
	for i := range all {
		all[i] = loadCanary
	}
	clear(all[guard : guard+n])
	return &guarded{all: all, guard: guard}
}

// bytes returns the part between the guard zones.
func (g *guarded) bytes() []byte { return g.all[g.guard : len(g.all)-g.guard] }

// intact reports whether both guard zones still hold the canary.
func (g *guarded) intact() bool {
	n := len(g.all)
	for i := 0; i < g.guard; i++ {
		if g.all[i] != loadCanary || g.all[n-1-i] != loadCanary {
			return false
		}
	}
	return true
}

// patternSeed mixes the identity of a payload into 32 bits.
func patternSeed(qp, seq int, kind byte) uint32 {
	x := uint32(qp)*0x9E3779B1 ^ uint32(seq)*0x85EBCA77 ^ uint32(kind)*0xC2B2AE3D
	x ^= x >> 15
	x *= 0x2C1B3C6D
	x ^= x >> 12
	return x
}

// fillPattern fills p with the payload of (qp, seq, kind).
func fillPattern(p []byte, qp, seq int, kind byte) {
	x := patternSeed(qp, seq, kind)
	for i := range p {
		p[i] = byte((x+uint32(i)*0x01000193)>>24 ^ uint32(i))
	}
}

// badPattern returns the offset of the first byte of p that is not the
// payload of (qp, seq, kind), or -1.
func badPattern(p []byte, qp, seq int, kind byte) int {
	x := patternSeed(qp, seq, kind)
	for i := range p {
		if p[i] != byte((x+uint32(i)*0x01000193)>>24^uint32(i)) {
			return i
		}
	}
	return -1
}

// patternSize returns a size in 1..maxn for (qp, seq, kind), spread over
// the whole range.
func patternSize(qp, seq int, kind byte, maxn int) int {
	return 1 + int(patternSeed(qp, seq, kind^0x5A)%uint32(maxn))
}
