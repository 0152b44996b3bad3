// Package wire holds the byte-level codecs of the iWARP headers above MPA
// framing: the DDP tagged and untagged headers (RFC 5041 §5), the RDMAP
// control field and message headers (RFC 5040 §4), the RFC 7306 Atomic and
// Immediate Data headers, the V2 draft's Read V2 Request, the Terminate
// message, and the typed Terminate codes every layer reports errors with.
//
// Parsers never allocate and never panic: they read from the caller's slice
// and return values or views into it. Encoders append to a caller buffer.
// The package imports nothing of the stack; every other layer imports it.
package wire
