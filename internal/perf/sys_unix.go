//go:build unix

package perf

import "syscall"

// cpuTimeNS returns the user and system CPU time of this process
// (getrusage), in nanoseconds.
func cpuTimeNS() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Utime.Nano() + ru.Stime.Nano())
}
