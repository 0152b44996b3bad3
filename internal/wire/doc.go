// Package wire holds the byte-level codecs of the iWARP headers above MPA
// framing: the DDP tagged and untagged headers (RFC 5041 §5), the RDMAP
// control field and message headers (RFC 5040 §4), the RFC 7306 Atomic and
// Immediate Data headers, the V2 draft's Read V2 Request, the Terminate
// message, and the typed Terminate codes every layer reports errors with.
//
// Parsers never allocate and never panic: they read from the caller's slice
// and return values or views into it. Encoders append to a caller buffer.
// The package imports nothing of the stack; every other layer imports it.
//
// # Files
//
//   - ddp.go: DDPHeader, ParseDDPHeader, AppendDDPHeader.
//   - rdmap.go: RDMAPControl and the Opcode constants.
//   - optable.go: the per-opcode table (LookupOpcode, OpInfo) and
//     ValidateDDPHeader, the receiver's first checks in siw's order.
//   - readreq.go, readv2.go, atomic.go, aopcode.go, immediate.go: the
//     fixed RDMAP headers.
//   - terminate.go, termlayout.go: the Terminate header, RFC and siw layouts.
//   - ulpdu.go: ParseULPDU and AppendULPDU, a whole DDP segment at once,
//     for tools.
//   - termcode.go, errors.go, rdmaperrors.go: Terminate codes and the
//     predeclared *ProtocolError values.
//
// # Decisions where the specifications are silent
//
//   - A ULPDU too short for its opcode's RDMAP header, payload after a
//     header that allows none, and Immediate Data that is not exactly 8
//     bytes are RDMAP remote operation errors, code 0xFF (unspecified).
//   - An unknown AOpCode is RDMAP/2/0x06 (unexpected opcode); the request's
//     fields are still returned. The Atomic Request's 28 reserved bits are
//     ignored on receive and kept in AtomicRequest.Reserved.
//   - An opcode in the wrong buffer model (a tagged Send, an untagged
//     Write) is RDMAP/2/0x06 (unexpected opcode).
//   - Under RDMAP version 1 the control field's bit 0x10 is reserved and
//     ignored, so a V2 opcode sent with RV=1 reads as its low 4 bits.
//   - A Terminate is parsed by its length: 4 bytes is the control field
//     alone; 6 adds the DDP Segment Length; then a DDP header whose own T
//     bit gives its length (14 or 18), then optionally exactly 28 bytes of
//     RDMA header. Anything else is ErrTerminateHeaders, returned with the
//     decoded code so the peer's error can still be reported. The M, D and
//     R flags are reported as sent and not cross-checked against what is
//     attached (siw sets R without attaching an RDMA header).
//   - The Terminate Control field is read in the RFC layout or in Linux
//     siw's nibble-swapped layout by the heuristic documented on
//     decodeTermControl; a few bare control fields (byte 0 = 0x01, 0x10,
//     0x02 or 0x20, no flags) read as valid codes both ways and are marked
//     Ambiguous. Terminates are always sent in the RFC layout.
//   - A V2 Send with Immediate segment with L=1 must carry exactly the 8
//     immediate bytes; its L=0 segments are ordinary payload.
package wire
