package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// When "iwarp benchfpdu" re-executes this test binary as its receiving
// child, become the child before any test runs.
func init() {
	if os.Getenv(benchChildEnv) != "" {
		os.Exit(runBenchChild(os.Stdin, os.Stdout, os.Stderr))
	}
}

// TestBenchFPDUPlumbing runs the whole command, child process included,
// with one pair of tiny trials per case: it checks that every case is
// measured and reported, not the numbers.
func TestBenchFPDUPlumbing(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"benchfpdu", "-pairs", "1", "-trial", "1ms"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &out, &errb)
	}
	for _, bc := range benchCases {
		found := false
		for _, line := range strings.Split(out.String(), "\n") {
			f := strings.Fields(line)
			if len(f) == 8 && f[0] == bc.name && (f[7] == "PASS" || f[7] == "FAIL") {
				found = true
			}
		}
		if !found {
			t.Errorf("no result line for %s in\n%s", bc.name, &out)
		}
	}
}

// TestTrialDesc: the trial descriptor round-trips and the FPDU layout has
// the requested size on the wire.
func TestTrialDesc(t *testing.T) {
	d := trialDesc{kind: trialFPDU, crc: true, size: 1460, count: 1 << 40}
	if got := decodeTrialDesc(d.encode()); got != d {
		t.Errorf("got %+v, want %+v", got, d)
	}
	for _, size := range []int{88, 1460, 65536} {
		u := ulpduForSize(size)
		if wire := 2 + u + 4; wire != size {
			t.Errorf("size %d: ULPDU %d gives %d octets", size, u, wire)
		}
	}
}

// TestBenchFPDUUsage: bad flags are a usage error.
func TestBenchFPDUUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"benchfpdu", "-pairs", "0"}, &out, &errb); code != 2 {
		t.Errorf("-pairs 0: exit %d", code)
	}
}
