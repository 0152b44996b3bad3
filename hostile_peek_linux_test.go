//go:build linux && !iwarp_portable

package iwarp_test

// peekDetectsPipelining: this build peeks at the socket after the MPA
// Request, so bytes pipelined behind it are refused at startup.
const peekDetectsPipelining = true
