package crc32c

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"sync"
	"testing"
)

// bitCRC is an independent bit-at-a-time reflected CRC-32C (poly
// 0x82F63B78, init and xorout ^0), written from the definition.
func bitCRC(crc uint32, p []byte) uint32 {
	crc = ^crc
	for _, b := range p {
		crc ^= uint32(b)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82F63B78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

// TestBitwiseReference checks Update against a CRC written from
// the definition (not hash/crc32), at fold and hybrid sizes.
func TestBitwiseReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 3*hybridMax*hybridStep+777)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, n := range []int{0, 1, 511, 512, 513, 1983, 1984, 1985, 4096, 63487, 63488, 63489, 63488 + 1984, 63488 + 1983, len(buf)} {
		for _, crc := range []uint32{0, ^uint32(0), rng.Uint32()} {
			if got, w := Update(crc, buf[:n]), bitCRC(crc, buf[:n]); got != w {
				t.Fatalf("Update(%#x, %d octets) = %#x, bitwise %#x", crc, n, got, w)
			}
		}
	}
	// RFC 3720 B.4 and the usual check value.
	if got := Checksum([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("check value %#x", got)
	}
}

// polyMod is x^k mod P computed by an independent route: square and
// multiply over GF(2)[x] with a generic reduction.
func clmul64(a, b uint64) (hi, lo uint64) {
	for i := range 64 {
		if b&(1<<i) != 0 {
			lo ^= a << i
			if i > 0 {
				hi ^= a >> (64 - i)
			}
		}
	}
	return
}

// reduce returns (hi:lo) mod (x^32 + poly) by long division.
func reduce(hi, lo uint64) uint64 {
	const full = 1<<32 | poly
	for i := 127; i >= 32; i-- {
		var set bool
		if i >= 64 {
			set = hi&(1<<(i-64)) != 0
		} else {
			set = lo&(1<<i) != 0
		}
		if !set {
			continue
		}
		s := i - 32
		// XOR full << s into hi:lo.
		if s >= 64 {
			hi ^= full << (s - 64)
		} else {
			lo ^= full << s
			if s > 0 {
				hi ^= full >> (64 - s)
			}
		}
	}
	return lo
}

func xpow(k int) uint64 {
	r, b := uint64(1), uint64(2) // x^0, x^1
	for ; k > 0; k >>= 1 {
		if k&1 != 0 {
			r = reduce(clmul64(r, b))
		}
		b = reduce(clmul64(b, b))
	}
	return r
}

// TestConstants recomputes every constant by square-and-multiply.
func TestConstants(t *testing.T) {
	for i, d := range []int{1024, 768, 512, 256, 128} {
		if a, b := bits.Reverse64(xpow(d+63)), bits.Reverse64(xpow(d-1)); foldConsts[2*i] != a || foldConsts[2*i+1] != b {
			t.Errorf("d=%d: %#x %#x, want %#x %#x", d, foldConsts[2*i], foldConsts[2*i+1], a, b)
		}
	}
	s := shiftConsts()
	for it := 1; it <= hybridMax; it++ {
		for m := 1; m <= 3; m++ {
			w := bits.Reverse32(uint32(xpow(8*40*it*m - 33)))
			if s[it][3-m] != w {
				t.Fatalf("shift[%d][%d] = %#x, want %#x", it, 3-m, s[it][3-m], w)
			}
		}
	}
}

// TestShiftSemantics checks that the SHIFT step (carry-less
// product with the constant, then the crc32 instruction on 64 bits from
// zero) moves a register forward exactly as feeding L zero octets does,
// done here in software with the bitwise CRC.
func TestShiftSemantics(t *testing.T) {
	s := shiftConsts()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, it := range []int{1, 8, 9, 100, 255, 256} {
		for m := 1; m <= 3; m++ {
			L := 40 * it * m
			r := rng.Uint32()
			// Register after L zeros from r: bitCRC works on inverted
			// values.
			want := ^bitCRC(^r, make([]byte, L))
			_, lo := clmul64(uint64(r), uint64(s[it][3-m]))
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], lo)
			got := ^bitCRC(^uint32(0), b[:]) // crc32 instruction from 0
			if got != want {
				t.Fatalf("it=%d m=%d: %#x, want %#x", it, m, got, want)
			}
		}
	}
}

// TestExhaustiveLong compares every length up to 2.2 hybrid calls at
// one odd alignment, and sparse lengths of several MiB.
func TestExhaustiveLong(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 5<<20+3)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for n := 0; n <= 2*hybridMax*hybridStep+hybridMin+130; n++ {
		p := buf[3 : 3+n]
		if got, w := Update(0x9e3779b9, p), want(0x9e3779b9, p); got != w {
			t.Fatalf("%d octets: %#x, want %#x", n, got, w)
		}
	}
	for _, n := range []int{1 << 20, 1<<20 + 1, 3<<20 - 1, 4 << 20, 5<<20 - 5, 5 << 20} {
		for _, off := range []int{0, 1, 2, 3} {
			p := buf[off : off+n]
			crc := rng.Uint32()
			if got, w := Update(crc, p), want(crc, p); got != w {
				t.Fatalf("%d octets at +%d: %#x, want %#x", n, off, got, w)
			}
		}
	}
}

// TestConcurrent runs Update from many goroutines (run with -race):
// shiftConsts' first use races with itself, and results stay right.
func TestConcurrent(t *testing.T) {
	buf := make([]byte, 200000)
	rng := rand.New(rand.NewPCG(2, 3))
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 50 {
				a := r.IntN(1000)
				n := r.IntN(len(buf) - a)
				p := buf[a : a+n]
				if got, w := Update(uint32(g), p), want(uint32(g), p); got != w {
					t.Errorf("goroutine %d: %d octets: %#x, want %#x", g, n, got, w)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDirect calls the assembly entry points directly with every
// legal size near the edges, not through Update's splitting.
func TestDirect(t *testing.T) {
	if !hasFold {
		t.Skip("no folding here")
	}
	rng := rand.New(rand.NewPCG(4, 4))
	buf := make([]byte, hybridMax*hybridStep+1)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for n := 128; n+1 <= len(buf); n += 128 {
		st := rng.Uint32()
		if got, w := fold(st, &buf[1], n, &foldConsts), ^want(^st, buf[1:1+n]); got != w {
			t.Fatalf("fold %d: %#x, want %#x", n, got, w)
		}
	}
	sh := shiftConsts()
	for it := 1; it <= hybridMax; it++ {
		st := rng.Uint32()
		n := it * hybridStep
		if got, w := hybrid(st, &buf[1], it, &foldConsts, &sh[it]), ^want(^st, buf[1:1+n]); got != w {
			t.Fatalf("hybrid it=%d: %#x, want %#x", it, got, w)
		}
	}
}
