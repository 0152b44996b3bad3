// Package mpa is MPA connection setup (RFC 5044 §7, RFC 6581): the MPA
// Request and Reply frames, the RFC 6581 IRD/ORD block, the negotiation of
// Rev, CRC, markers per direction, peer-to-peer mode with its ready-to-receive
// (RTR) message and the project's extension bits (docs/spec/extensions.md
// §3), rejection with private data, bounded startup time, and the hand-over
// to full operation on an fpdu.Conn.
//
// The layers of the package, bottom up:
//
//   - frame.go, irdord.go, ext.go: byte codecs (ParseFrame/AppendFrame,
//     ParseIRDORD/AppendIRDORD). Parsers never allocate and never panic.
//   - negotiate*.go: the decisions as pure functions (RequestFrame,
//     DecideResponder, DecideInitiator) so every row of the truth table in
//     docs/mpa.md is a test case.
//   - initiator.go, responder.go, rtr.go, terminate.go, fallback.go: startup
//     over a net.Conn, bounded by a context, ending in an established *Conn.
//
// docs/mpa.md has the negotiation truth tables (generated from the tests)
// and every decision taken where the RFCs leave a choice.
//
// Violations found in received frames are *wire.ProtocolError values (the
// Err* variables) carrying the LLP Terminate code of RFC 5044 §8 and RFC 6581
// §9 they map to.
package mpa
