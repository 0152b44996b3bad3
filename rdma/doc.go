// Package rdma defines the vocabulary every layer of the stack shares: the
// operations and flags of a work request, the status of a completion, the
// state of a queue pair, and the Terminate codes of RFC 5040 §4.8, RFC 5041
// §7.2, RFC 5044 §8 and RFC 6581 §9.
//
// Each type has its one definition here, used by the protocol engine as it
// is and re-exported by package iwarp under the same names (as package os
// re-exports io/fs): most programs import only iwarp and never name this
// package.
package rdma
