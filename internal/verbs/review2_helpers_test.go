package verbs

import (
	"runtime"
	"testing"
	"time"
)

// eventually waits until cond holds, failing the test after bound: for
// states the shell reaches without telling anyone (a counter, a state).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after %v", what, bound)
		}
		runtime.Gosched()
	}
}
