// Package perf is the measurement harness of "iwarp perf": perftest-style
// bandwidth and latency tests of every data operation over this module's
// iWARP stack, the raw TCP baseline between the same two processes, and
// the comparison of the two (-vs-tcp) against the targets of
// docs/performance.md.
//
// A run has two ends. Serve is the server: an iWARP listener, and a raw
// TCP listener on the next port. An Endpoint is the client's view of one;
// RunTests measures the operations, modes and sizes of a Config, printing
// a table per test, and RunVsTCP measures each target as interleaved
// pairs (ours, raw TCP) and gives it a verdict. Both return a Run, which
// is also the JSON document (WriteJSON) and the source of the PNG chart
// (WriteChart).
//
// Every test is one or more fresh connections whose MPA private data tells
// the server what to set up (proto.go). Bandwidth counts bytes confirmed
// at the sink; latency is the round trip through the blocking API. Each
// result also has the CPU time and the heap allocations per operation of
// both processes.
package perf
