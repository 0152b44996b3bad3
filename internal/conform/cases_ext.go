package conform

import (
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// atomicCases break RFC 7306: Atomic Requests and Responses and Immediate
// Data. Atomic errors carry the DDP header only (RFC 7306 §8.1).
func atomicCases() []*Case {
	atomic := func(req func(*Session) wire.AtomicRequest) func(*Session) error {
		return func(s *Session) error {
			return s.SendOffending(AtomicRequest(s.RV, s.NextMSN(wire.QNReadReq), req(s)))
		}
	}
	const need = NeedRFC7306 | NeedRegion | NeedIRD
	return []*Case{
		{
			Name: "Atomic/misaligned-TO/RDMAP-2-0x07", Category: "atomics", Needs: need,
			Spec:   "RFC 7306 §5.2.1 (the Remote TO must be 64-bit aligned; code: the project's, as Linux siw): Terminate RDMAP/remote operation 0x07",
			Script: atomic(func(s *Session) wire.AtomicRequest { return FetchAdd(1, s.main().STag, s.main().TO+4, 1) }),
			Want:   terminate(rdma.TermRDMAPStreamCatastroph, AttachDDP),
		},
		{
			Name: "Atomic/past-end/RDMAP-1-0x01", Category: "atomics", Needs: need,
			Spec: "RFC 7306 §8.1: an Atomic target outside the buffer: Terminate RDMAP/remote protection 0x01",
			Script: atomic(func(s *Session) wire.AtomicRequest {
				return FetchAdd(2, s.main().STag, s.main().TO+uint64(s.main().Len), 1)
			}),
			Want: terminate(rdma.TermRDMAPBaseBounds, AttachDDP),
		},
		{
			Name: "Atomic/unregistered-STag/RDMAP-1-0x00", Category: "atomics", Needs: NeedRFC7306 | NeedIRD,
			Spec:   "RFC 7306 §8.1: an Atomic Request naming an invalid STag: Terminate RDMAP/remote protection 0x00",
			Script: atomic(func(s *Session) wire.AtomicRequest { return FetchAdd(3, s.unknownSTag(), s.main().TO, 1) }),
			Want:   terminate(rdma.TermRDMAPInvalidSTag, AttachDDP),
		},
		{
			Name: "Atomic/without-atomic-access/RDMAP-1-0x02", Category: "atomics", Needs: need | NeedReadOnly,
			Spec: "RFC 7306 §8.1: an Atomic Request to memory without remote atomic access: Terminate RDMAP/remote protection 0x02",
			Script: atomic(func(s *Session) wire.AtomicRequest {
				r := s.slot(SlotReadOnly)
				return FetchAdd(4, r.STag, r.TO, 1)
			}),
			Want: terminate(rdma.TermRDMAPAccessRights, AttachDDP),
		},
		{
			Name: "Atomic/unknown-AOpCode/RDMAP-2-0x06", Category: "atomics", Needs: need,
			Spec: "RFC 7306 §5.2.1 (undefined AOpCode; code: the project's): Terminate RDMAP/remote operation 0x06",
			Script: atomic(func(s *Session) wire.AtomicRequest {
				r := FetchAdd(5, s.main().STag, s.main().TO, 1)
				r.AOpCode = 0x7
				return r
			}),
			Want: terminate(rdma.TermRDMAPUnexpectedOpcode, AttachDDP),
		},
		{
			Name: "Atomic/Atomic-Response-unsolicited/RDMAP-2-0x06", Category: "responses", Needs: NeedRFC7306,
			Spec: "RFC 7306 §5: an Atomic Response with no Atomic Request outstanding (code: the project's): Terminate RDMAP/remote operation 0x06",
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(s.RV, wire.OpAtomicResponse, true, wire.QNResponse, s.NextMSN(wire.QNResponse), 0, make([]byte, 12)))
			},
			Want: terminate(rdma.TermRDMAPUnexpectedOpcode, AttachDDP),
		},
		{
			Name: "Atomic/Immediate-Data-7-octets/RDMAP-2-0xFF", Category: "immediate data", Needs: NeedRFC7306,
			Spec: "RFC 7306 §4: Immediate Data is exactly 8 octets (code: the project's): Terminate RDMAP/remote operation 0xFF",
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(s.RV, wire.OpImmediate, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, make([]byte, 7)))
			},
			Want: terminate(rdma.TermRDMAPOpUnspecified, AttachDDP),
		},
		{
			Name: "Atomic/FetchAdd-not-negotiated/accepted", Category: "extensions not negotiated", Needs: NeedNoRFC7306 | NeedRegion | NeedIRD,
			Spec:    "docs/spec/extensions.md leaves receipt open; the project receives RFC 7306 liberally (docs/extensions.md: hardware sends Immediate Data without MPA bits), so an Atomic Request on a connection without the extension is executed and answered. A responder that Terminates it with RDMAP/remote operation 0x06 is also within RFC 7306 §7",
			Startup: func(c *mpa.Config) { c.Extensions, c.NoAdvertise = 0, true },
			Script:  atomic(func(s *Session) wire.AtomicRequest { return FetchAdd(6, s.main().STag, s.main().TO, 1) }),
			Want:    accepted,
		},
	}
}

// v2Cases break the V2 draft (RDMAP version 2, Send with Immediate, Read
// V2).
func v2Cases() []*Case {
	return []*Case{
		{
			Name: "V2/RDMAP-version-2-not-negotiated/RDMAP-2-0x05", Category: "extensions not negotiated",
			Spec:    "V2 draft §3: RDMAP version 2 only after it was agreed; otherwise an invalid RDMAP version: Terminate RDMAP/remote operation 0x05",
			Startup: func(c *mpa.Config) { c.Extensions, c.NoAdvertise = 0, true },
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(wire.RDMAPVersion2, wire.OpSendImm, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, make([]byte, 8)))
			},
			Want: terminate(rdma.TermRDMAPInvalidVersion, AttachDDP),
		},
		{
			Name: "V2/RDMAP-version-1-after-V2/RDMAP-2-0x05", Category: "V2", Needs: NeedV2,
			Spec: "V2 draft §3: once version 2 is agreed every message carries RV=2: Terminate RDMAP/remote operation 0x05",
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(wire.RDMAPVersion1, wire.OpSend, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, []byte("v1")))
			},
			Want: terminate(rdma.TermRDMAPInvalidVersion, AttachDDP),
		},
		{
			Name: "V2/undefined-opcode-0x17/RDMAP-2-0x06", Category: "V2", Needs: NeedV2,
			Spec: "V2 draft §4: opcode 0x17 is undefined: Terminate RDMAP/remote operation 0x06",
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(wire.RDMAPVersion2, 0x17, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, []byte("x")))
			},
			Want: terminate(rdma.TermRDMAPUnexpectedOpcode, AttachDDP),
		},
		{
			Name: "V2/Read-V2-Response-unsolicited/RDMAP-2-0x06", Category: "responses", Needs: NeedV2,
			Spec: "V2 draft §5: a Read V2 Response with no Read V2 outstanding (code: the project's): Terminate RDMAP/remote operation 0x06",
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(wire.RDMAPVersion2, wire.OpReadV2Response, true, wire.QNResponse, s.NextMSN(wire.QNResponse), 0, pattern(4)))
			},
			Want: terminate(rdma.TermRDMAPUnexpectedOpcode, AttachDDP),
		},
		{
			Name: "V2/Send-with-Immediate-7-octets/RDMAP-2-0xFF", Category: "immediate data", Needs: NeedV2,
			Spec: "V2 draft §4: the last segment of a Send with Immediate carries exactly the 8 Immediate octets (code: the project's): Terminate RDMAP/remote operation 0xFF",
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(wire.RDMAPVersion2, wire.OpSendImm, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, make([]byte, 7)))
			},
			Want: terminate(rdma.TermRDMAPOpUnspecified, AttachDDP),
		},
	}
}
