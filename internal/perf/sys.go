package perf

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
)

// takeSnapshot reads this process's counters. With settle it first
// collects garbage and returns free memory to the system, so that the
// resident size counts live memory (goroutine stacks included).
func takeSnapshot(settle bool) sysSnapshot {
	if settle {
		runtime.GC()
		debug.FreeOSMemory()
	}
	m := mallocsNow()
	return sysSnapshot{cpuNS: cpuTimeNS(), mallocs: m, rss: residentBytes()}
}

// startSnapshot collects garbage, then reads this process's counters: the
// start of a measured window. A test starts from a collected heap, as
// testing.B's benchmarks do, so that the garbage of the tests before it
// (their connections' setup and teardown) does not set off a collection
// inside its window, whose cost is not the test's: each collection empties
// the runtime's central caches (the sudogs of goroutines blocked on a
// channel or a contended mutex), which then refill by allocating.
func startSnapshot() sysSnapshot {
	runtime.GC()
	return takeSnapshot(false)
}

// mallocsNow returns the heap objects allocated so far by this process.
func mallocsNow() uint64 {
	s := [1]metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// residentBytes returns the resident set size from /proc (Linux), or 0.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// openFDs counts this process's open file descriptors (Linux:
// /proc/self/fd); false when it cannot.
func openFDs() (int, bool) {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, false
	}
	return len(names) - 1, true // not the one reading the directory
}

// fdsNow returns this process's file descriptors: open, and the most it
// may open, raised to the hard limit.
func fdsNow() fdUse {
	open, _ := openFDs()
	return fdUse{open: uint64(open), limit: raiseFDLimit()}
}
