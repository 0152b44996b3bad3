package conform

import (
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// readCases send RDMA Read Requests the responder must refuse (RFC 5040
// §4.4, §7.1), and the Read shapes it must accept. Read Request errors carry
// the request's RDMA header (R) in the Terminate.
func readCases() []*Case {
	read := func(req func(*Session) wire.ReadRequest) func(*Session) error {
		return func(s *Session) error {
			return s.SendOffending(ReadRequest(s.RV, s.NextMSN(wire.QNReadReq), req(s)))
		}
	}
	src := func(stag uint32, to uint64, n uint32) wire.ReadRequest {
		return wire.ReadRequest{SinkSTag: 0x00DA7A01, SinkTO: 0, Size: n, SrcSTag: stag, SrcTO: to}
	}
	const need = NeedRegion | NeedIRD
	return []*Case{
		{
			Name: "Read/unregistered-source-STag/RDMAP-1-0x00", Category: "Read Request", Needs: NeedIRD,
			Spec:   "RFC 5040 §7.1: a Read Request naming an invalid Data Source STag: Terminate RDMAP/remote protection 0x00",
			Script: read(func(s *Session) wire.ReadRequest { return src(s.unknownSTag(), s.main().TO, 16) }),
			Want:   terminate(rdma.TermRDMAPInvalidSTag, AttachRDMA),
		},
		{
			Name: "Read/without-read-access/RDMAP-1-0x02", Category: "Read Request", Needs: need | NeedWriteOnly,
			Spec: "RFC 5040 §7.1: a Read Request of memory without remote read access: Terminate RDMAP/remote protection 0x02",
			Script: read(func(s *Session) wire.ReadRequest {
				r := s.slot(SlotWriteOnly)
				return src(r.STag, r.TO, 16)
			}),
			Want: terminate(rdma.TermRDMAPAccessRights, AttachRDMA),
		},
		{
			Name: "Read/past-end/RDMAP-1-0x01", Category: "Read Request", Needs: need,
			Spec:   "RFC 5040 §7.1: a Read Request past the end of the source buffer: Terminate RDMAP/remote protection 0x01",
			Script: read(func(s *Session) wire.ReadRequest { return src(s.main().STag, s.main().TO+uint64(s.main().Len)-8, 16) }),
			Want:   terminate(rdma.TermRDMAPBaseBounds, AttachRDMA),
		},
		{
			Name: "Read/4GiB-request/RDMAP-1-0x01", Category: "Read Request", Needs: need,
			Spec:   "RFC 5040 §7.1: a Read Request of 2^32-1 octets from a smaller buffer is out of bounds: Terminate RDMAP/remote protection 0x01, no data sent",
			Script: read(func(s *Session) wire.ReadRequest { return src(s.main().STag, s.main().TO, 0xFFFFFFFF) }),
			Want:   terminate(rdma.TermRDMAPBaseBounds, AttachRDMA),
		},
		{
			Name: "Read/other-PD-STag/RDMAP-1-0x03", Category: "Read Request", Needs: need | NeedOtherPD,
			Spec: "RFC 5040 §7.1: a source STag of another protection domain: Terminate RDMAP/remote protection 0x03",
			Script: read(func(s *Session) wire.ReadRequest {
				r := s.slot(SlotOtherPD)
				return src(r.STag, r.TO, 16)
			}),
			Want: terminate(rdma.TermRDMAPSTagNotAssoc, AttachRDMA),
		},
		{
			Name: "Read/TO-wrap/RDMAP-1-0x04", Category: "Read Request", Needs: need,
			Spec:   "RFC 5040 §7.1: a source TO plus length that wraps past 2^64: Terminate RDMAP/remote protection 0x04",
			Script: read(func(s *Session) wire.ReadRequest { return src(s.main().STag, ^uint64(0)-3, 16) }),
			Want:   terminate(rdma.TermRDMAPTOWrap, AttachRDMA),
		},
		{
			Name: "Read/MSN-out-of-range/DDP-2-0x03", Category: "Read Request", Needs: NeedIRD,
			Spec: "RFC 5041 §7.2, RFC 5040 §5.3: a Read Request MSN beyond the responder's IRD window: Terminate DDP/untagged 0x03 (with the request's RDMA header)",
			Script: func(s *Session) error {
				return s.SendOffending(ReadRequest(s.RV, 500, src(s.main().STag, s.main().TO, 16)))
			},
			Want: terminate(rdma.TermDDPMSNRange, AttachRDMA),
		},
		{
			Name: "Read/IRD-exceeded/RDMAP-2-0x07", Category: "Read Request", Needs: need,
			Spec:    "RFC 5040 §6.1.1, RFC 6581 §5: more Read Requests outstanding than the IRD the responder granted (IRD 1 here; 32 Reads of the whole region in one burst, their Responses not read, so with a region of 1 MiB or more the first Response is still being sent when the next Request arrives): Terminate RDMAP/remote operation 0x07 (Linux siw's choice)",
			Startup: func(c *mpa.Config) { c.IRD, c.ORD = 1, 1 },
			Script: func(s *Session) error {
				var burst []byte
				for i := 0; i < 32; i++ {
					b, err := s.Frame(ReadRequest(s.RV, s.NextMSN(wire.QNReadReq), src(s.main().STag, s.main().TO, s.main().Len)))
					if err != nil {
						return err
					}
					burst = append(burst, b...)
				}
				return s.Raw(burst)
			},
			Want: terminate(rdma.TermRDMAPStreamCatastroph, AttachRDMA),
		},
		{
			Name: "Read/zero-length-unknown-STags/accepted", Category: "Read Request", Needs: NeedIRD,
			Spec: "RFC 5040 §4.4, docs/spec/rdmap.md (the Read RTR shape): a zero-length Read is answered with a zero-length Read Response, its STags are not checked",
			Script: func(s *Session) error {
				return s.Send(ReadRequest(s.RV, s.NextMSN(wire.QNReadReq), src(0x00ABCD02, 0x99, 0)))
			},
			Want: accepted,
		},
		{
			Name: "Read/within-bounds/accepted", Category: "Read Request", Needs: need,
			Spec: "RFC 5040 §4.4: a Read inside a region with remote read access is answered (control case)",
			Script: func(s *Session) error {
				return s.Send(ReadRequest(s.RV, s.NextMSN(wire.QNReadReq), src(s.main().STag, s.main().TO, 64)))
			},
			Want: accepted,
		},
	}
}
