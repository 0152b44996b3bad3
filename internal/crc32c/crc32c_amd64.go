//go:build amd64 && !purego

package crc32c

import (
	"os"
	"strings"
)

// foldAVX2 folds the n octets at p (n a multiple of 128, at least 128)
// with state XORed into their first four to a 128-bit remainder, and
// returns the CRC register (not inverted) after those 16 octets from zero:
// the register after the n octets from state.
//
//go:noescape
func foldAVX2(state uint32, p *byte, n int, k *[10]uint64) uint32

// hybridAVX2 computes the CRC register after iters*248 octets at p from
// state: the first 128*iters folded as foldAVX2 does, and at the same time
// three regions of 40*iters octets each with the crc32 instruction (the
// two run on different execution units), joined with the constants in
// shift (shiftConsts).
//
//go:noescape
func hybridAVX2(state uint32, p *byte, iters int, k *[10]uint64, shift *[4]uint32) uint32

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax uint32)

var fold, hybrid = foldAVX2, hybridAVX2

// hasFold reports AVX2, VPCLMULQDQ and SSE4.2, with the OS saving the YMM
// registers.
var hasFold = func() bool {
	if cpuOff(os.Getenv("GODEBUG")) {
		return false
	}
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, sse42, pclmul = 1 << 27, 1 << 20, 1 << 1
	if ecx1&osxsave == 0 || ecx1&sse42 == 0 || ecx1&pclmul == 0 || xgetbv()&6 != 6 {
		return false
	}
	_, ebx7, ecx7, _ := cpuid(7, 0)
	const avx2, vpclmul = 1 << 5, 1 << 10
	return ebx7&avx2 != 0 && ecx7&vpclmul != 0
}()

// cpuOff reports whether a GODEBUG setting turns off a CPU feature the
// folding needs, as it turns it off for the runtime and hash/crc32.
func cpuOff(godebug string) bool {
	for _, kv := range strings.Split(godebug, ",") {
		switch strings.TrimSpace(kv) {
		case "cpu.all=off", "cpu.avx2=off", "cpu.pclmulqdq=off", "cpu.sse42=off", "cpu.avx=off":
			return true
		}
	}
	return false
}
