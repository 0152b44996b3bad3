//go:build unix

package perf

import (
	"errors"
	"syscall"
)

// cpuTimeNS returns the user and system CPU time of this process
// (getrusage), in nanoseconds.
func cpuTimeNS() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Utime.Nano() + ru.Stime.Nano())
}

// raiseFDLimit raises this process's soft limit of open files to its hard
// limit, as Go's os package does at startup (again here, in case the
// program lowered it), and returns the soft limit (0: unknown).
func raiseFDLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	if rl.Cur < rl.Max {
		up := rl
		up.Cur = rl.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up) == nil {
			rl = up
		}
	}
	return uint64(rl.Cur)
}

// outOfFDs reports whether err is a process or the system out of file
// descriptors.
func outOfFDs(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
