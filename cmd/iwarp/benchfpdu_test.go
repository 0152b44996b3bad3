package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdubench"
)

// TestBenchFPDUPlumbing runs the whole command, child process included,
// with one pair of tiny trials per case: it checks that every case is
// measured and reported, not the numbers (-strict=false: a FAIL of such
// tiny trials says nothing).
func TestBenchFPDUPlumbing(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"benchfpdu", "-pairs", "1", "-trial", "1ms", "-strict=false"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &out, &errb)
	}
	for _, c := range fpdubench.Cases {
		found := false
		for _, line := range strings.Split(out.String(), "\n") {
			f := strings.Fields(line)
			if len(f) == 8 && f[0] == c.Name && (f[7] == "PASS" || f[7] == "FAIL") {
				found = true
			}
		}
		if !found {
			t.Errorf("no result line for %s in\n%s", c.Name, &out)
		}
	}
}
