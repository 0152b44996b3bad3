// Package iwarp is a pure-Go software RDMA NIC: an iWARP stack (MPA, DDP and
// RDMAP, RFC 5044/6581, 5041 and 5040, with the RFC 7306 extensions and the
// RDMAP Extensions V2 draft) that gives Go programs one-sided RDMA over
// ordinary TCP and talks on the wire to Linux soft-iWARP (siw) and iWARP
// hardware.
//
// This package will hold the verbs-style API (devices, protection domains,
// registered memory, queue pairs, completion queues, connection setup). The
// protocol layers live in internal packages, one per protocol:
//
//   - internal/wire: byte-level codecs of the DDP and RDMAP headers (RFC 5041,
//     RFC 5040, RFC 7306, the V2 draft) and the typed Terminate codes.
//   - internal/fpdu: MPA full operation (RFC 5044 §4-§6): FPDU framing, CRC32c,
//     markers, zero-copy transmit and direct-placement receive.
//   - internal/mpa: MPA connection setup (RFC 5044 §7, RFC 6581): the Request
//     and Reply frames, IRD/ORD, peer-to-peer RTR and extension negotiation.
package iwarp
