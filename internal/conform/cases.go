package conform

import (
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// All returns the whole suite, in report order. Every call returns fresh
// values, so callers may filter or change them.
func All() []*Case {
	var all []*Case
	for _, group := range [][]*Case{startupCases(), framingCases(), ddpCases(), taggedCases(), readCases(), rdmapCases(), atomicCases(), v2Cases(), segmentCases(), windowCases()} {
		all = append(all, group...)
	}
	return all
}

// terminate is the Want of a case that expects code with the headers of
// attach.
func terminate(code rdma.TermCode, attach Attach) Want {
	return Want{Kind: WantTerminate, Code: code, Attach: attach}
}

var (
	accepted = Want{Kind: WantAccept}
	refused  = Want{Kind: WantRefused}
	closed   = Want{Kind: WantClosed}
	torn     = Want{Kind: WantTeardown}
)

// main returns the advertised main region.
func (s *Session) main() Region { return s.Advert.Regions[SlotMain] }

// slot returns an advertised region.
func (s *Session) slot(i int) Region { return s.Advert.Regions[i] }

// unknownSTag returns an STag that differs from the main region's in its
// index (the upper 24 bits), so that no responder finds it registered.
func (s *Session) unknownSTag() uint32 { return s.main().STag ^ 0x5A5A00 }

// sendMsg is a valid Send of payload on QN 0 with the next MSN.
func (s *Session) sendMsg(payload []byte) ULPDU {
	return Untagged(s.RV, wire.OpSend, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, payload)
}
