package main

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the main job as the README's first command does (with a
// smaller largest size) and checks every operation was verified, the size
// sweep stopped at -max and the atomics' rows count operations, not bytes.
func TestDemo(t *testing.T) {
	code, s, errOut := runCLI(t, "demo", "-max", "100000")
	if code != exitOK {
		t.Fatalf("demo exited %d: %s\n%s", code, errOut, s)
	}
	for _, want := range []string{"Send ", "RDMA Write", "RDMA Read", "Send with Invalidate", "Local Invalidate",
		"RDMA Read with Invalidate", "Send with Solicited Event", "shared receive queue", "FetchAdd (RFC 7306)",
		"FetchAdd with add mask", "CompareSwap ", "CompareSwap with compare and swap masks", "Immediate Data",
		"Write with Immediate", "Send with Immediate (V2)", "RDMA Read V2", "all 31 operations verified",
		"disconnected in order", "1 SRQ limit events"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "FAILED") {
		t.Errorf("demo reported a failure:\n%s", s)
	}
	if !regexp.MustCompile(`(?m)^RDMA Read +100000 +1 `).MatchString(s) || strings.Contains(s, "1048576") {
		t.Errorf("the size sweep does not end at -max 100000:\n%s", s)
	}
	if !regexp.MustCompile(`(?m)^FetchAdd \(RFC 7306\) +8 +100 `).MatchString(s) {
		t.Errorf("the FetchAdd row is not size 8, count 100:\n%s", s)
	}
}

// TestDemoFails: one step whose check fails makes the demo report it in
// its row and return an error (the command then exits 1), after running
// the others.
func TestDemoFails(t *testing.T) {
	var out bytes.Buffer
	bad := demoStep{op: "deliberately wrong", size: -1, count: 1, run: func(*demoEnv) (time.Duration, error) {
		return 0, errors.New("the check failed")
	}}
	err := demo(&out, demoConfig{addr: "127.0.0.1:0", crc: true, maxSize: 0, extra: []demoStep{bad}})
	if err == nil || !strings.Contains(err.Error(), "1 of 17 operations failed") {
		t.Fatalf("demo returned %v\n%s", err, out.String())
	}
	if !regexp.MustCompile(`(?m)^deliberately wrong .* FAILED: the check failed$`).MatchString(out.String()) ||
		strings.Count(out.String(), "verified") != 16 {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestDemoSizes: the sweep obeys -max.
func TestDemoSizes(t *testing.T) {
	for _, c := range []struct {
		max       int
		sweep     []int
		extension []int
	}{
		{0, []int{0}, []int{0}},
		{1, []int{0, 1}, []int{0}},
		{4096, []int{0, 1, 4095, 4096}, []int{0, 4096}},
		{1 << 20, []int{0, 1, 4095, 65536, 1 << 20}, []int{0, 4096, 1 << 20}},
		{16 << 20, []int{0, 1, 4095, 65536, 1 << 20, 16 << 20}, []int{0, 4096, 1 << 20}},
	} {
		if got := demoSizes(c.max); !slices.Equal(got, c.sweep) {
			t.Errorf("demoSizes(%d) = %v, want %v", c.max, got, c.sweep)
		}
		if got := demoExtSizes(c.max); !slices.Equal(got, c.extension) {
			t.Errorf("demoExtSizes(%d) = %v, want %v", c.max, got, c.extension)
		}
	}
}
