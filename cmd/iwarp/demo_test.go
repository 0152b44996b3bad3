package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDemo runs the main job as the README's first command does (with a
// smaller largest size) and checks every operation was verified.
func TestDemo(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"demo", "-max", "1048576"}, &out, &errb); code != 0 {
		t.Fatalf("demo exited %d: %s\n%s", code, errb.String(), out.String())
	}
	s := out.String()
	for _, want := range []string{"Send", "RDMA Write", "RDMA Read", "FetchAdd/CompareSwap", "Immediate Data", "Write with Immediate", "Send with Immediate (V2)", "RDMA Read V2", "all operations verified", "disconnected in order"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "FAILED") {
		t.Errorf("demo reported a failure:\n%s", s)
	}
}
