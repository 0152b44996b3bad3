//go:build amd64 && !purego

package crc32c

import "testing"

// TestCPUOff: the GODEBUG settings that turn off AVX2, PCLMULQDQ or SSE4.2
// for the runtime turn off the folding too.
func TestCPUOff(t *testing.T) {
	for _, c := range []struct {
		godebug string
		off     bool
	}{
		{"", false},
		{"gctrace=1", false},
		{"cpu.avx2=off", true},
		{"gctrace=1, cpu.pclmulqdq=off", true},
		{"cpu.sse42=off", true},
		{"cpu.all=off", true},
		{"cpu.avx512f=off", false},
	} {
		if got := cpuOff(c.godebug); got != c.off {
			t.Errorf("cpuOff(%q) = %v, want %v", c.godebug, got, c.off)
		}
	}
}
