// Package leakcheck finds goroutines a test suite left running. Test
// packages call it from TestMain after m.Run.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Leaked returns the stacks of goroutines, other than the caller's, whose
// stack mentions one of the given substrings (package paths), waiting up to
// wait for them to finish first.
func Leaked(wait time.Duration, match ...string) []string {
	deadline := time.Now().Add(wait)
	for {
		var bad []string
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n")[1:] { // [0] is ours
			for _, m := range match {
				if strings.Contains(g, m) {
					bad = append(bad, g)
					break
				}
			}
		}
		if len(bad) == 0 || time.Now().After(deadline) {
			return bad
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Check runs the tests' result code through a leak check: it returns code,
// or 1 if goroutines of the given packages are still running.
func Check(code int, match ...string) int {
	if code != 0 {
		return code
	}
	if bad := Leaked(3*time.Second, match...); len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "leakcheck: %d goroutines still running after the tests:\n\n%s\n", len(bad), strings.Join(bad, "\n\n"))
		return 1
	}
	return code
}
