// Package crc32c computes the CRC-32C (Castagnoli) of the MPA trailer
// (RFC 5044 §4.4, RFC 3385) as fast as the CPU allows.
//
// Update returns what hash/crc32's Update returns with the Castagnoli
// table, octet for octet. On amd64 CPUs with AVX2 and VPCLMULQDQ it folds
// long inputs 128 octets at a time with carry-less multiplication (the
// method of Intel's "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ Instruction") while three streams of the SSE4.2 crc32
// instruction, which hash/crc32 uses, take other parts of the input on
// other execution units; it finishes the last octets with hash/crc32. On
// an AMD EPYC with 256-bit VPCLMULQDQ (a shared virtual machine)
// BenchmarkUpdate puts it at 1.05-1.4 times hash/crc32's speed from 4 KiB
// up, depending on the run, and at about the same speed from 512 octets to
// 2 KiB. Elsewhere, for short inputs, with the purego build tag, and with
// GODEBUG=cpu.avx2=off (or cpu.avx=off, cpu.pclmulqdq=off, cpu.sse42=off,
// cpu.all=off), it is hash/crc32.
package crc32c

import (
	"hash/crc32"
	"math/bits"
	"sync"
)

// castagnoli is hash/crc32's table (it uses the CPU's crc32 instruction
// for it where there is one).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// foldMin is the shortest input that is folded: below it the crc32
// instruction is as fast.
const foldMin = 512

// Hybrid blocks: each iteration takes 128 octets for the vector unit and
// 40 for each of three crc32 instruction streams.
const (
	hybridStep = 128 + 3*40
	// hybridMax bounds the iterations of one call (63,488 octets), so
	// that shiftConsts stays small; longer inputs take several calls.
	hybridMax = 256
	// hybridMin is the shortest input given to the hybrid.
	hybridMin = 8 * hybridStep
)

// Checksum returns the CRC-32C of p.
func Checksum(p []byte) uint32 { return Update(0, p) }

// Update returns the CRC-32C of the octets covered by crc followed by p:
// Update(0, p) == Checksum(p), and the CRC of a concatenation is the chain
// of updates over its parts.
func Update(crc uint32, p []byte) uint32 {
	if !hasFold || len(p) < foldMin {
		return crc32.Update(crc, castagnoli, p)
	}
	// state is the CRC register, not inverted. Each call below returns
	// the register after its octets from state: a folded remainder is
	// congruent to the octets it stands for (with state folded into their
	// first four) and stands where their last 16 stood.
	state := ^crc
	if len(p) >= hybridMin {
		shifts := shiftConsts()
		for len(p) >= hybridMin {
			it := min(len(p)/hybridStep, hybridMax)
			state = hybrid(state, &p[0], it, &foldConsts, &shifts[it])
			p = p[it*hybridStep:]
		}
	}
	if len(p) >= foldMin {
		n := len(p) &^ 127
		state = fold(state, &p[0], n, &foldConsts)
		p = p[n:]
	}
	return crc32.Update(^state, castagnoli, p)
}

// poly is the CRC-32C generator polynomial without its x^32 term, bit j
// the coefficient of x^j (RFC 3385).
const poly = 0x1EDC6F41

// xPowMod returns x^k mod P, bit j the coefficient of x^j.
func xPowMod(k int) uint64 {
	v := uint64(1)
	for range k {
		v <<= 1
		if v&(1<<32) != 0 {
			v ^= 1<<32 | poly
		}
	}
	return v
}

// foldPair returns the two constants that move a 128-bit lane d bits
// forward in the message. In the reflected order of the CRC (the first
// bit of the message is the highest power of x), a lane's low quadword X_H
// weighs x^64 more than its high quadword X_L, so the lane times x^d is
// X_H·x^(d+64) + X_L·x^d; a carry-less product of two reflected operands
// comes out multiplied by x once more, so the constants are x^(d+63) and
// x^(d-1) modulo P, reflected into 64 bits.
func foldPair(d int) (k1, k2 uint64) {
	return bits.Reverse64(xPowMod(d + 63)), bits.Reverse64(xPowMod(d - 1))
}

// foldConsts holds the pairs for 1024 bits (the main loop: each of eight
// lanes moves 128 octets), then 768, 512, 256 and 128 bits (the final
// reduction of the eight lanes to one).
var foldConsts = func() (k [10]uint64) {
	for i, d := range []int{1024, 768, 512, 256, 128} {
		k[2*i], k[2*i+1] = foldPair(d)
	}
	return k
}()

// mulMod returns a·b mod P, bit j the coefficient of x^j.
func mulMod(a, b uint64) uint64 {
	var v uint64
	for i := 31; i >= 0; i-- {
		v <<= 1
		if v&(1<<32) != 0 {
			v ^= 1<<32 | poly
		}
		if b&(1<<i) != 0 {
			v ^= a
		}
	}
	return v
}

// shiftConsts returns, for each iteration count it, the constants that
// move a CRC register forward past 3, 2 and 1 scalar regions of 40*it
// octets: x^(8L-33) mod P reflected into 32 bits (the carry-less product
// of two reflected 32-bit operands is the product times x, and the crc32
// instruction's reduction of 64 bits multiplies by x^32).
var shiftConsts = sync.OnceValue(func() *[hybridMax + 1][4]uint32 {
	t := new([hybridMax + 1][4]uint32)
	step := xPowMod(8 * 40)              // one region of 40 octets
	pow := make([]uint64, 3*hybridMax+1) // pow[j] = x^(8*40*j-33) mod P
	pow[1] = xPowMod(8*40 - 33)
	for j := 2; j < len(pow); j++ {
		pow[j] = mulMod(pow[j-1], step)
	}
	for it := 1; it <= hybridMax; it++ {
		for m := 1; m <= 3; m++ {
			t[it][3-m] = bits.Reverse32(uint32(pow[m*it]))
		}
	}
	return t
})
