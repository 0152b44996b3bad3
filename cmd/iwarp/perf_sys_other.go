//go:build !unix

package main

// cpuTimeNS is not available on this system: CPU columns read 0.
func cpuTimeNS() uint64 { return 0 }
