// Package fpdubench is the harness of "iwarp benchfpdu": the throughput of
// the MPA FPDU stream (internal/fpdu) against raw Go TCP carrying the same
// octets, measured as interleaved pairs of trials between two processes,
// and the framing layer's tripwire targets (docs/fpdu.md).
//
// Serve is the receiving end (run in a process of its own, so that sender
// and receiver compete for the CPUs as two real peers would); Measure
// sends one case's trials to it and returns the medians.
package fpdubench
