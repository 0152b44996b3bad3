// Package mem is the memory side of the RNIC: the STag table of one device,
// registered regions with their protection domain and access rights, the
// checks a tagged placement or a remote read, atomic or invalidation must pass
// (RFC 5040 §6.4, RFC 5041 §5.2, RFC 5042), and 64-bit atomics on registered
// memory (RFC 7306 §5.1).
//
// A Table is safe for concurrent use. Checks on the data path take no lock
// and allocate nothing.
package mem
