//go:build !linux || iwarp_portable

package iwarp_test

// peekDetectsPipelining: this build cannot peek at the socket.
const peekDetectsPipelining = false

// waitersRead: no waiting goroutine reads the socket itself here.
const waitersRead = false
