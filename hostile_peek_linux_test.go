//go:build linux && !iwarp_portable

package iwarp_test

// peekDetectsPipelining: this build peeks at the socket after the MPA
// Request, so bytes pipelined behind it are refused at startup.
const peekDetectsPipelining = true

// waitersRead: a waiting goroutine reads its QP's socket itself here.
const waitersRead = true
