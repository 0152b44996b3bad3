package mpa

import (
	"errors"
	"testing"
)

// FuzzNegotiation feeds any Request and any Responder configuration through
// DecideResponder, encodes and re-parses its Reply, and checks that
// DecideInitiator, configured as the Request says, agrees: an accepted
// Request gives an accepting Initiator with matching parameters, a rejected
// one a RejectError, and nothing panics.
func FuzzNegotiation(f *testing.F) {
	for _, v := range allFrameVectors(f) {
		f.Add(v.b, uint8(0), uint16(16), uint16(16), uint8(RTRAll), uint8(ExtAll))
	}
	f.Add(rawFrame(false, FlagEnhanced|FlagMarkers, 2, blk(true, RTRRead, 0, 0), ""), uint8(0xFF), uint16(0), uint16(0), uint8(RTRRead), uint8(1))
	f.Fuzz(func(t *testing.T, reqBytes []byte, bits uint8, ird, ord uint16, accept, ext uint8) {
		req, _, err := ParseFrame(reqBytes, 0)
		if err != nil || req.Reply {
			return
		}
		rcfg := &Config{
			CRC: bits&1 != 0, Markers: bits&2 != 0, RefuseMarkers: bits&4 != 0, NoAdvertise: bits&8 != 0,
			IRD: ird & IRDORDMax, ORD: ord & IRDORDMax, AcceptRTR: RTR(accept) & RTRAll, Extensions: Ext(ext),
		}
		d := DecideResponder(&req, rcfg)
		if d.Action == ActionClose {
			t.Fatalf("valid Request closed on: %v", d.Err)
		}
		rep, _, err := ParseFrame(appendFrameBlock(nil, d.Reply, &d.Block, nil), 0)
		if err != nil {
			t.Fatalf("our Reply does not parse: %v", err)
		}
		icfg := &Config{Extensions: req.Flags.Ext().Normalize()}
		if b, ok := req.IRDORD(); ok {
			icfg.IRD, icfg.ORD = b.IRD, b.ORD
		}
		id := DecideInitiator(&req, &rep, icfg)
		if d.Action == ActionReject {
			if id.Action != ActionReject || !errors.As(id.Err, new(*RejectError)) {
				t.Fatalf("reject seen as %v %v", id.Action, id.Err)
			}
			return
		}
		if id.Action != ActionAccept {
			t.Fatalf("Initiator refuses our Reply %s to %s: %v", fmtFrame(rep), fmtFrame(req), id.Err)
		}
		ip, rp := id.Params, d.Params
		if ip.Rev != rp.Rev || ip.CRC != rp.CRC || ip.SendMarkers != rp.RecvMarkers || ip.RecvMarkers != rp.SendMarkers ||
			ip.P2P != rp.P2P || ip.RTR != rp.RTR || ip.Extensions != rp.Extensions || ip.Enhanced != rp.Enhanced {
			t.Fatalf("disagreement: Initiator %+v, Responder %+v", ip, rp)
		}
		if rp.Enhanced && (ip.ORD > d.Block.IRD || d.Block.ORD > icfg.IRD) {
			t.Fatalf("IRD/ORD: Initiator %+v, Reply block %+v", ip, d.Block)
		}
	})
}
