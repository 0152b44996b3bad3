package conform

import (
	"bytes"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// ddpCases break the DDP header and the untagged buffer model (RFC 5041
// §5, §7.2). The untagged cases assume the responder has receives posted
// (`iwarp serve` posts 16 of 4 KiB, siw's rping server one of 16 octets).
func ddpCases() []*Case {
	return []*Case{
		{
			Name: "DDP/tagged-DDP-version-0/DDP-1-0x04", Category: "DDP header",
			Spec: "RFC 5041 §7.2: tagged segment with an invalid DDP version: Terminate DDP/tagged 0x04",
			Script: func(s *Session) error {
				return s.SendOffending(Tagged(s.RV, wire.OpWrite, true, 0x77, 0, nil).WithDDPVersion(0))
			},
			Want: terminate(rdma.TermDDPTaggedVersion, AttachDDP),
		},
		{
			Name: "DDP/untagged-DDP-version-2/DDP-2-0x06", Category: "DDP header",
			Spec: "RFC 5041 §7.2: untagged segment with an invalid DDP version: Terminate DDP/untagged 0x06",
			Script: func(s *Session) error {
				return s.SendOffending(s.sendMsg([]byte("version")).WithDDPVersion(2))
			},
			Want: terminate(rdma.TermDDPUntaggedVersion, AttachDDP),
		},
		{
			Name: "DDP/invalid-QN-5/DDP-2-0x01", Category: "DDP header",
			Spec: "RFC 5041 §7.2: untagged segment to a queue that does not exist: Terminate DDP/untagged 0x01",
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(s.RV, wire.OpSend, true, 5, 1, 0, []byte("qn")))
			},
			Want: terminate(rdma.TermDDPInvalidQN, AttachDDP),
		},
		{
			Name: "DDP/Send-MSN-out-of-range/DDP-2-0x03", Category: "MSN",
			Spec: "RFC 5041 §7.2: an MSN with no buffer in range (here 1000 ahead): Terminate DDP/untagged 0x03",
			Script: func(s *Session) error {
				return s.SendOffending(Untagged(s.RV, wire.OpSend, true, wire.QNSend, 1000, 0, []byte("far")))
			},
			Want: terminate(rdma.TermDDPMSNRange, AttachDDP),
		},
		{
			Name: "DDP/Send-MSN-replayed/DDP-2-0x03", Category: "MSN",
			Spec: "RFC 5041 §7.2: a message whose MSN was already completed (a replay) is out of range: Terminate DDP/untagged 0x03",
			Script: func(s *Session) error {
				if err := s.Send(Untagged(s.RV, wire.OpSend, true, wire.QNSend, 1, 0, []byte("first"))); err != nil {
					return err
				}
				s.msn[wire.QNSend] = 2
				return s.SendOffending(Untagged(s.RV, wire.OpSend, true, wire.QNSend, 1, 0, []byte("again")))
			},
			Want: terminate(rdma.TermDDPMSNRange, AttachDDP),
		},
		{
			Name: "DDP/Send-MO-gap/DDP-2-0x04", Category: "MO",
			Spec: "RFC 5041 §7.2 with docs/spec/ddp.md: an untagged MO that skips octets: Terminate DDP/untagged 0x04",
			Script: func(s *Session) error {
				msn := s.NextMSN(wire.QNSend)
				if err := s.Send(Untagged(s.RV, wire.OpSend, false, wire.QNSend, msn, 0, []byte("abcd"))); err != nil {
					return err
				}
				return s.SendOffending(Untagged(s.RV, wire.OpSend, true, wire.QNSend, msn, 100, []byte("efgh")))
			},
			Want: terminate(rdma.TermDDPInvalidMO, AttachDDP),
		},
		{
			Name: "DDP/Send-MO-overlap/DDP-2-0x04", Category: "MO",
			Spec: "RFC 5041 §7.2 with docs/spec/ddp.md: an untagged MO that rewrites octets already placed: Terminate DDP/untagged 0x04",
			Script: func(s *Session) error {
				msn := s.NextMSN(wire.QNSend)
				if err := s.Send(Untagged(s.RV, wire.OpSend, false, wire.QNSend, msn, 0, []byte("abcdefgh"))); err != nil {
					return err
				}
				return s.SendOffending(Untagged(s.RV, wire.OpSend, true, wire.QNSend, msn, 4, []byte("efgh")))
			},
			Want: terminate(rdma.TermDDPInvalidMO, AttachDDP),
		},
		{
			Name: "DDP/Send-longer-than-buffer/DDP-2-0x05", Category: "MO",
			Spec: "RFC 5041 §7.2: an untagged message longer than the receive buffer (here 8000 octets into 4 KiB): Terminate DDP/untagged 0x05",
			Script: func(s *Session) error {
				return s.SendOffending(s.sendMsg(bytes.Repeat([]byte{0x5A}, 8000)))
			},
			Want: terminate(rdma.TermDDPTooLong, AttachDDP),
		},
		{
			Name: "DDP/Sends-beyond-posted-receives/DDP-2-0x02", Category: "MSN",
			Spec: "RFC 5041 §7.2: an untagged message with no receive buffer posted for it: Terminate DDP/untagged 0x02 (300 Sends in one burst outrun any re-posting)",
			Script: func(s *Session) error {
				var burst []byte
				for i := 0; i < 300; i++ {
					b, err := s.Frame(s.sendMsg([]byte("burst")))
					if err != nil {
						return err
					}
					burst = append(burst, b...)
				}
				return s.Raw(burst)
			},
			Want: terminate(rdma.TermDDPNoBuffer, AttachDDP),
		},
		{
			Name: "DDP/untagged-messages-interleaved/DDP-2-0x03", Category: "MO",
			Spec: "RFC 5040 §5.1, RFC 5041 §5.3: the segments of one message arrive before the next message's; a second Send starting while the first is unfinished has an MSN out of range: Terminate DDP/untagged 0x03",
			Script: func(s *Session) error {
				first, second := s.NextMSN(wire.QNSend), s.NextMSN(wire.QNSend)
				if err := s.Send(Untagged(s.RV, wire.OpSend, false, wire.QNSend, first, 0, []byte("one-a"))); err != nil {
					return err
				}
				return s.SendOffending(Untagged(s.RV, wire.OpSend, true, wire.QNSend, second, 0, []byte("two")))
			},
			Want: terminate(rdma.TermDDPMSNRange, AttachDDP),
		},
		{
			Name: "DDP/tagged-Write-inside-untagged-Send/accepted", Category: "MO", Needs: NeedRegion,
			Spec: "RFC 5041 §5: tagged and untagged segments are independent: a Write between two segments of a Send is placed and the Send completes",
			Script: func(s *Session) error {
				msn := s.NextMSN(wire.QNSend)
				m := s.main()
				for _, u := range []ULPDU{
					Untagged(s.RV, wire.OpSend, false, wire.QNSend, msn, 0, []byte("head")),
					Tagged(s.RV, wire.OpWrite, true, m.STag, m.TO, []byte("inside")),
					Untagged(s.RV, wire.OpSend, true, wire.QNSend, msn, 4, []byte("tail")),
				} {
					if err := s.Send(u); err != nil {
						return err
					}
				}
				return nil
			},
			Want: accepted,
		},
	}
}
