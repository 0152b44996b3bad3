package conform

import (
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// rdmapCases break the RDMAP layer (RFC 5040 §4, §5.5, §7) and send the
// responder Terminates of its own.
func rdmapCases() []*Case {
	return []*Case{
		{
			Name: "RDMAP/RDMAP-version-0/RDMAP-2-0x05", Category: "RDMAP header",
			Spec: "RFC 5040 §7.1: a message with an RDMAP version the receiver does not speak: Terminate RDMAP/remote operation 0x05",
			Script: func(s *Session) error {
				u := Untagged(0, wire.OpSend, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, []byte("rv0"))
				return s.SendOffending(u)
			},
			Want: terminate(rdma.TermRDMAPInvalidVersion, AttachDDP),
		},
		{
			Name: "RDMAP/undefined-opcode-0xC/RDMAP-2-0x06", Category: "RDMAP header",
			Spec: "RFC 5040 §7.1: an opcode the receiver does not define (0xC): Terminate RDMAP/remote operation 0x06",
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(s.RV, 0xC, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, []byte("op")))
			},
			Want: terminate(rdma.TermRDMAPUnexpectedOpcode, AttachDDP),
		},
		{
			Name: "RDMAP/Read-Response-unsolicited/RDMAP-2-0x06", Category: "responses",
			Spec: "RFC 5040 §7.1, docs/spec/rdmap.md: a Read Response with no Read outstanding is an unexpected opcode: Terminate RDMAP/remote operation 0x06",
			Script: func(s *Session) error {
				return s.SendOffending(Tagged(s.RV, wire.OpReadResponse, true, 0x00ABCD03, 0, pattern(8)))
			},
			Want: terminate(rdma.TermRDMAPUnexpectedOpcode, AttachDDP),
		},
		{
			Name: "RDMAP/Send-with-Invalidate-unknown-STag/RDMAP-2-0x09", Category: "invalidation",
			Spec: "RFC 5040 §7.1: a Send with Invalidate naming an STag that is not valid: Terminate RDMAP/remote operation 0x09",
			Script: func(s *Session) error {
				u := Untagged(s.RV, wire.OpSendInv, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, []byte("inv"))
				putInvSTag(u.Bytes, s.unknownSTag())
				return s.SendOffending(u)
			},
			Want: terminate(rdma.TermRDMAPOpInvalidate, AttachDDP),
		},
		{
			Name: "RDMAP/garbage-Terminate-from-peer/closed", Category: "Terminate from the peer",
			Spec: "RFC 5040 §5.5: a received Terminate ends the stream; it is never answered with a Terminate (here its control field is all ones and its length fits no layout)",
			Script: func(s *Session) error {
				return s.Send(Untagged(s.RV, wire.OpTerminate, true, wire.QNTerminate, s.NextMSN(wire.QNTerminate), 0, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x02, 0x03}))
			},
			Want: closed,
		},
		{
			Name: "RDMAP/Terminate-in-siw-layout-from-peer/closed", Category: "Terminate from the peer",
			Spec: "RFC 5040 §5.5: a received Terminate, here DDP/untagged 0x01 with Linux siw's nibble-swapped control field, ends the stream without a Terminate in answer",
			Script: func(s *Session) error {
				body := []byte{0x21, 0x01, 0x00, 0x00}
				return s.Send(Untagged(s.RV, wire.OpTerminate, true, wire.QNTerminate, s.NextMSN(wire.QNTerminate), 0, body))
			},
			Want: closed,
		},
	}
}

// putInvSTag sets the Invalidate STag field (octets 2-5 of an untagged DDP
// header, RFC 5040 §4.1).
func putInvSTag(b []byte, stag uint32) {
	b[2], b[3], b[4], b[5] = byte(stag>>24), byte(stag>>16), byte(stag>>8), byte(stag)
}
