package conform

import (
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// taggedCases aim RDMA Writes at memory they may not touch (RFC 5041
// §7.2, RFC 5040 §5.3, RFC 5042 §5).
func taggedCases() []*Case {
	write := func(stag func(*Session) uint32, to func(*Session) uint64, n int) func(*Session) error {
		return func(s *Session) error {
			return s.SendOffending(Tagged(s.RV, wire.OpWrite, true, stag(s), to(s), pattern(n)))
		}
	}
	mainSTag := func(s *Session) uint32 { return s.main().STag }
	mainTO := func(s *Session) uint64 { return s.main().TO }
	slotSTag := func(i int) func(*Session) uint32 { return func(s *Session) uint32 { return s.slot(i).STag } }
	slotTO := func(i int) func(*Session) uint64 { return func(s *Session) uint64 { return s.slot(i).TO } }
	return []*Case{
		{
			Name: "Tagged/Write-unregistered-STag/DDP-1-0x00", Category: "tagged placement",
			Spec:   "RFC 5041 §7.2: a tagged segment naming an STag that is not valid: Terminate DDP/tagged 0x00",
			Script: write(func(s *Session) uint32 { return s.unknownSTag() }, mainTO, 16),
			Want:   terminate(rdma.TermDDPInvalidSTag, AttachDDP),
		},
		{
			Name: "Tagged/Write-other-PD-STag/DDP-1-0x02", Category: "tagged placement", Needs: NeedOtherPD,
			Spec:   "RFC 5041 §7.2, RFC 5042 §5.1: an STag of another protection domain is not associated with the stream: Terminate DDP/tagged 0x02",
			Script: write(slotSTag(SlotOtherPD), slotTO(SlotOtherPD), 16),
			Want:   terminate(rdma.TermDDPSTagNotAssoc, AttachDDP),
		},
		{
			Name: "Tagged/Write-without-write-access/DDP-1-0x00", Category: "tagged placement", Needs: NeedReadOnly,
			Spec:   "RFC 5040 §5.3 (no DDP code for access rights; the project and Linux siw use the invalid-STag code): Terminate DDP/tagged 0x00",
			Script: write(slotSTag(SlotReadOnly), slotTO(SlotReadOnly), 16),
			Want:   terminate(rdma.TermDDPInvalidSTag, AttachDDP),
		},
		{
			Name: "Tagged/Write-past-end/DDP-1-0x01", Category: "tagged placement", Needs: NeedRegion,
			Spec:   "RFC 5041 §7.2: a tagged segment that runs past the end of the buffer: Terminate DDP/tagged 0x01 (base or bounds)",
			Script: write(mainSTag, func(s *Session) uint64 { return s.main().TO + uint64(s.main().Len) - 8 }, 16),
			Want:   terminate(rdma.TermDDPBaseBounds, AttachDDP),
		},
		{
			Name: "Tagged/Write-TO-wrap/DDP-1-0x03", Category: "tagged placement", Needs: NeedRegion,
			Spec:   "RFC 5041 §7.2: a tagged segment whose TO plus length wraps past 2^64: Terminate DDP/tagged 0x03",
			Script: write(mainSTag, func(*Session) uint64 { return ^uint64(0) - 3 }, 16),
			Want:   terminate(rdma.TermDDPTOWrap, AttachDDP),
		},
		{
			Name: "Tagged/Write-invalidated-STag/DDP-1-0x00", Category: "tagged placement", Needs: NeedInvalidated,
			Spec:   "RFC 5040 §5.2, RFC 5041 §7.2: an STag invalidated (deregistered) before the Write is invalid at once: Terminate DDP/tagged 0x00",
			Script: write(slotSTag(SlotInvalidated), slotTO(SlotInvalidated), 16),
			Want:   terminate(rdma.TermDDPInvalidSTag, AttachDDP),
		},
		{
			Name: "Tagged/Write-re-keyed-old-STag/DDP-1-0x00", Category: "tagged placement", Needs: NeedRekeyed,
			Spec:   "RFC 5040 §5.2: after a region's key changed, its old STag is invalid: Terminate DDP/tagged 0x00",
			Script: write(slotSTag(SlotRekeyed), slotTO(SlotRekeyed), 16),
			Want:   terminate(rdma.TermDDPInvalidSTag, AttachDDP),
		},
		{
			Name: "Tagged/zero-length-Write-unknown-STag/accepted", Category: "tagged placement",
			Spec: "docs/spec/rdmap.md (the RTR shapes of RFC 6581): a zero-length Write places nothing and is not checked",
			Script: func(s *Session) error {
				return s.Send(Tagged(s.RV, wire.OpWrite, true, 0x00ABCD01, 0x1234, nil))
			},
			Want: accepted,
		},
		{
			Name: "Tagged/Write-within-bounds/accepted", Category: "tagged placement", Needs: NeedRegion,
			Spec: "RFC 5040 §4.3: a Write inside a region with remote write access is placed (control case)",
			Script: func(s *Session) error {
				return s.Send(Tagged(s.RV, wire.OpWrite, true, s.main().STag, s.main().TO, pattern(64)))
			},
			Want: accepted,
		},
	}
}

// pattern returns n recognisable octets.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0xA0 + i%16)
	}
	return b
}
