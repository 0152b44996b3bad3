// Package bench holds what the measuring harnesses of the iwarp tool
// (internal/perf, internal/perftest, internal/fpdubench) share: latency
// summaries and medians, the machine's load average, and the child
// process on the other end of a measurement (the tool re-executed, which
// prints its address first and stops when its standard input closes).
package bench
