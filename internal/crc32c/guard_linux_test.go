//go:build linux

package crc32c

import (
	"math/rand/v2"
	"syscall"
	"testing"
)

// guarded maps n readable pages between two PROT_NONE pages and returns
// the readable region; a read before or after it faults.
func guarded(t *testing.T, pages int) []byte {
	t.Helper()
	ps := syscall.Getpagesize()
	m, err := syscall.Mmap(-1, 0, (pages+2)*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	if err := syscall.Mprotect(m[:ps], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(m[(pages+1)*ps:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return m[ps : (pages+1)*ps : (pages+1)*ps]
}

// boundaryLens are the lengths around every boundary of the folded paths.
func boundaryLens() []int {
	seen := map[int]bool{}
	var out []int
	add := func(n int) {
		for d := -3; d <= 3; d++ {
			if m := n + d; m >= 0 && !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	for _, n := range []int{0, 16, 128, 256, foldMin, hybridMin, hybridMax * hybridStep, hybridMax*hybridStep + hybridMin, hybridMax*hybridStep + foldMin, 2 * hybridMax * hybridStep} {
		add(n)
	}
	for k := 1; k <= 40; k++ {
		add(k * 128)
	}
	for k := 8; k <= 2*hybridMax+2; k++ {
		add(k * hybridStep)
		add(k*hybridStep + foldMin)
		add(k*hybridStep + 127)
	}
	return out
}

// TestGuardPages puts inputs flush against an unmapped page on
// either side: the assembly must read exactly p.
func TestGuardPages(t *testing.T) {
	const pages = 40 // 160 KiB: two full hybrid calls and a fold
	g := guarded(t, pages)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range g {
		g[i] = byte(rng.Uint32())
	}
	for _, n := range boundaryLens() {
		if n > len(g) {
			continue
		}
		crc := rng.Uint32()
		end := g[len(g)-n:] // ends at the unmapped page
		if got, w := Update(crc, end), want(crc, end); got != w {
			t.Fatalf("end-flush %d octets: %#x, want %#x", n, got, w)
		}
		start := g[:n] // starts at the unmapped page before
		if got, w := Update(crc, start), want(crc, start); got != w {
			t.Fatalf("start-flush %d octets: %#x, want %#x", n, got, w)
		}
	}
	// Every alignment within a 64-octet window, ending at the guard page.
	for off := 0; off < 64; off++ {
		for _, n := range []int{foldMin, hybridMin, hybridMin + 1, 63488, 63488 + 1984 + 7, len(g) - 64} {
			p := g[len(g)-n-off : len(g)-off]
			if got, w := Update(7, p), want(7, p); got != w {
				t.Fatalf("%d octets ending %d before the guard: %#x, want %#x", n, off, got, w)
			}
		}
	}
}
