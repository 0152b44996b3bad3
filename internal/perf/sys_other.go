//go:build !unix

package perf

// cpuTimeNS is not available on this system: CPU columns read 0.
func cpuTimeNS() uint64 { return 0 }
