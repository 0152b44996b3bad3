package conform

import (
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// segmentCases break the rules that tie a message's segments together:
// single-segment messages (Read Request, Read V2 Request, Atomic Request,
// Immediate Data) sent with L=0 or at MO≠0, and a continuing segment of a
// Send whose opcode is not the first segment's. The Terminates carry the
// DDP header (RFC 7306 §8.1 for the RFC 7306 messages; these are DDP
// checks, RFC 7306 §8.2); the codes are the project's (docs/wire.md).
func segmentCases() []*Case {
	const (
		notLast = "RFC 7306 §8.2 (the DDP layer validates every segment field; a single-segment message's only segment is its last): L=0 is a message that would run past its fixed size: Terminate DDP/untagged buffer 0x05 (message too long; code: the project's, docs/wire.md)"
		notMO0  = "RFC 7306 §8.2 and docs/spec/ddp.md §2 (a message's first segment is at MO 0, and a single-segment message has no other): Terminate DDP/untagged buffer 0x04 (invalid MO)"
	)
	single := func(op wire.Opcode, qn uint32, last bool, mo uint32, body func(*Session) []byte) func(*Session) error {
		return func(s *Session) error {
			return s.SendOffending(Untagged(s.RV, op, last, qn, s.NextMSN(qn), mo, body(s)))
		}
	}
	readReq := func(s *Session) []byte {
		return wire.AppendReadRequest(nil, &wire.ReadRequest{SinkSTag: 0x00DA7A01, Size: 16, SrcSTag: s.main().STag, SrcTO: s.main().TO})
	}
	readV2Req := func(s *Session) []byte {
		return wire.AppendReadV2Request(nil, &wire.ReadV2Request{Size: 16, SrcSTag: s.main().STag, SrcTO: s.main().TO})
	}
	atomicReq := func(s *Session) []byte {
		r := FetchAdd(7, s.main().STag, s.main().TO, 1)
		return wire.AppendAtomicRequest(nil, &r)
	}
	immediate := func(*Session) []byte { return make([]byte, wire.ImmediateDataLen) }
	// continued sends the first segment of a Send-type message with opcode
	// first, then its last segment with opcode last.
	continued := func(first, last wire.Opcode, lastPayload []byte) func(*Session) error {
		return func(s *Session) error {
			msn := s.NextMSN(wire.QNSend)
			if err := s.Send(Untagged(s.RV, first, false, wire.QNSend, msn, 0, pattern(4))); err != nil {
				return err
			}
			return s.SendOffending(Untagged(s.RV, last, true, wire.QNSend, msn, 4, lastPayload))
		}
	}
	const opcodeChanged = "RFC 5041 §5 and RFC 5040 §4.2: every segment of a message carries the message's opcode (the V2 draft's Appendix A.3: a Send with Immediate's L=1 segment is its immediate segment); a continuing segment with another opcode: Terminate RDMAP/remote operation 0x06 (unexpected opcode; code: the project's, docs/wire.md)"
	tooLong := terminate(rdma.TermDDPTooLong, AttachDDP)
	badMO := terminate(rdma.TermDDPInvalidMO, AttachDDP)
	return []*Case{
		{Name: "Segment/Read-Request-L0/DDP-2-0x05", Category: "single-segment messages", Needs: NeedRegion | NeedIRD, Spec: notLast,
			Script: single(wire.OpReadRequest, wire.QNReadReq, false, 0, readReq), Want: tooLong},
		{Name: "Segment/Read-Request-MO-8/DDP-2-0x04", Category: "single-segment messages", Needs: NeedRegion | NeedIRD, Spec: notMO0,
			Script: single(wire.OpReadRequest, wire.QNReadReq, true, 8, readReq), Want: badMO},
		{Name: "Segment/Read-V2-Request-L0/DDP-2-0x05", Category: "single-segment messages", Needs: NeedV2 | NeedRegion | NeedIRD, Spec: notLast,
			Script: single(wire.OpReadV2Request, wire.QNReadReq, false, 0, readV2Req), Want: tooLong},
		{Name: "Segment/Read-V2-Request-MO-8/DDP-2-0x04", Category: "single-segment messages", Needs: NeedV2 | NeedRegion | NeedIRD, Spec: notMO0,
			Script: single(wire.OpReadV2Request, wire.QNReadReq, true, 8, readV2Req), Want: badMO},
		{Name: "Segment/Atomic-Request-L0/DDP-2-0x05", Category: "single-segment messages", Needs: NeedRFC7306 | NeedRegion | NeedIRD, Spec: notLast,
			Script: single(wire.OpAtomicRequest, wire.QNReadReq, false, 0, atomicReq), Want: tooLong},
		{Name: "Segment/Atomic-Request-MO-8/DDP-2-0x04", Category: "single-segment messages", Needs: NeedRFC7306 | NeedRegion | NeedIRD, Spec: notMO0,
			Script: single(wire.OpAtomicRequest, wire.QNReadReq, true, 8, atomicReq), Want: badMO},
		{Name: "Segment/Immediate-Data-L0/DDP-2-0x05", Category: "single-segment messages", Needs: NeedRFC7306, Spec: notLast,
			Script: single(wire.OpImmediate, wire.QNSend, false, 0, immediate), Want: tooLong},
		{Name: "Segment/Immediate-Data-MO-8/DDP-2-0x04", Category: "single-segment messages", Needs: NeedRFC7306, Spec: notMO0,
			Script: single(wire.OpImmediate, wire.QNSend, true, 8, immediate), Want: badMO},
		{Name: "Segment/Send-with-Immediate-ended-by-Send/RDMAP-2-0x06", Category: "continuing segments", Needs: NeedV2, Spec: opcodeChanged,
			Script: continued(wire.OpSendImm, wire.OpSend, pattern(4)), Want: terminate(rdma.TermRDMAPUnexpectedOpcode, AttachDDP)},
		{Name: "Segment/Send-ended-by-Send-with-Immediate/RDMAP-2-0x06", Category: "continuing segments", Needs: NeedV2, Spec: opcodeChanged,
			Script: continued(wire.OpSend, wire.OpSendImm, make([]byte, wire.ImmediateDataLen)), Want: terminate(rdma.TermRDMAPUnexpectedOpcode, AttachDDP)},
		{Name: "Segment/Send-ended-by-Send-with-SE/RDMAP-2-0x06", Category: "continuing segments", Spec: opcodeChanged,
			Script: continued(wire.OpSend, wire.OpSendSE, pattern(4)), Want: terminate(rdma.TermRDMAPUnexpectedOpcode, AttachDDP)},
	}
}
