// Package engine is the RDMA engine of one queue pair: the send and receive
// queues, the transmit and receive paths that turn work requests into DDP
// segments and received segments into placements and completions, the
// outstanding-read bookkeeping on both sides (ORD and IRD), the QP state
// machine, and the error path (first error wins → Terminate → teardown →
// flush). It implements RFC 5040 on top of RFC 5041 segments carried by an
// MPA connection (internal/fpdu).
//
// Goroutines: each connected QP has one receive goroutine, which is the only
// reader of the connection, and one transmit goroutine, which sends work
// that cannot be written without blocking. A poster whose work fits in the
// socket writes it itself when the transmit path is idle, so a small
// operation crosses no goroutine hand-off (docs/architecture.md).
package engine
