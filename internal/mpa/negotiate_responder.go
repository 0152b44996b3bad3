package mpa

// ResponderDecision is a Responder's answer to a Request.
type ResponderDecision struct {
	// Action is ActionAccept, ActionReject or ActionClose.
	Action Action
	// Reply is the header of the Reply to send (Accept and Reject):
	// Reply, Flags and Rev; its PrivateData is left nil.
	Reply Frame
	// Block is the Reply's IRD/ORD block when Reply.Enhanced().
	Block IRDORD
	// Params are the agreed parameters (Accept only).
	Params Params
	// Err says why the Request was rejected or closed on.
	Err error
}

// DecideResponder returns the Responder's decision for a parsed Request req
// under configuration cfg (docs/spec/mpa.md §1 and its Project decisions,
// extensions.md §3). It is a pure function: every row of the truth table
// in docs/mpa.md is one call.
//
//   - A Reply key where a Request belongs: close.
//   - Rev 1 and Rev 2 are answered in kind (ParseFrame already closed on
//     anything else); H under Rev 2 is answered with H and a block.
//   - M: markers are sent to the Initiator; with RefuseMarkers, reject.
//   - C: the Reply has C if the Request had it or cfg.CRC asks.
//   - IRD/ORD: the Reply's ORD is min(cfg.ORD, the Request's IRD), its IRD
//     min(cfg.IRD, the Request's ORD); a Request value of 0x3FFF thus gets
//     the configured value.
//   - P2P: with AcceptRTR empty the Reply leaves A clear; otherwise it
//     picks Write, then Read, then Send among the offered and accepted
//     types, and rejects when there is none. A Read RTR with an IRD of 0
//     is answered with IRD 1 and RTRCredit set.
//   - Extension bits: the intersection of the offered and implemented
//     sets (none when NoAdvertise), overridden by a ULP declaration.
func DecideResponder(req *Frame, cfg *Config) ResponderDecision {
	var d ResponderDecision
	if req.Reply {
		d.Action, d.Err = ActionClose, ErrBadKey
		return d
	}
	enhanced := req.Enhanced()
	d.Reply = Frame{Reply: true, Rev: req.Rev}
	reject := func(err error) ResponderDecision {
		d.Action, d.Err = ActionReject, err
		d.Reply.Flags = FlagReject
		if enhanced {
			d.Reply.Flags |= FlagEnhanced
		}
		d.Block, d.Params = IRDORD{}, Params{}
		return d
	}

	if req.Flags&FlagMarkers != 0 && cfg.RefuseMarkers {
		return reject(ErrMarkersRefused)
	}
	p := &d.Params
	p.Rev = req.Rev
	p.SendMarkers = req.Flags&FlagMarkers != 0
	p.RecvMarkers = cfg.Markers
	p.CRC = req.Flags&FlagCRC != 0 || cfg.CRC
	if p.RecvMarkers {
		d.Reply.Flags |= FlagMarkers
	}
	if p.CRC {
		d.Reply.Flags |= FlagCRC
	}

	local := cfg.Extensions.Normalize()
	var answered Ext
	if !cfg.NoAdvertise {
		answered = (req.Flags.Ext().Normalize() & local).Normalize()
	}
	d.Reply.Flags |= Flags(answered)
	p.Extensions = answered
	if cfg.DeclarePeerExtensions {
		p.Extensions = (local & cfg.PeerExtensions.Normalize()).Normalize()
	}

	p.IRD, p.ORD = cfg.IRD, cfg.ORD
	if !enhanced {
		return d
	}
	d.Reply.Flags |= FlagEnhanced
	in, _ := req.IRDORD()
	p.Enhanced = true
	p.PeerIRD, p.PeerORD = in.IRD, in.ORD
	p.IRD, p.ORD = min(cfg.IRD, in.ORD), min(cfg.ORD, in.IRD)
	d.Block = IRDORD{IRD: p.IRD, ORD: p.ORD}
	if in.P2P && cfg.AcceptRTR != 0 {
		rtr := rtrPick(in.RTR & cfg.AcceptRTR)
		if rtr == 0 {
			return reject(ErrNoRTRModel)
		}
		p.P2P, p.RTR = true, rtr
		d.Block.P2P, d.Block.RTR = true, rtr
		if rtr == RTRRead && d.Block.IRD == 0 {
			d.Block.IRD = 1
			p.RTRCredit = true
		}
	}
	return d
}
