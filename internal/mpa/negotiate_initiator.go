package mpa

// InitiatorDecision is an Initiator's verdict on the Reply to its Request.
type InitiatorDecision struct {
	// Action is ActionAccept, ActionReject (the peer rejected),
	// ActionClose or ActionTerminate.
	Action Action
	// Params are the agreed parameters (Accept), or, for Terminate, the
	// framing (CRC, markers) the Terminate FPDU must be sent with.
	Params Params
	// Err says why (a *wire.ProtocolError whose code goes into the
	// Terminate, or a *RejectError).
	Err error
}

// DecideInitiator returns the Initiator's decision for the Reply rep to its
// Request req, sent under configuration cfg (docs/spec/mpa.md §1 and its
// Project decisions, extensions.md §3). It is a pure function.
//
//   - A Request key where the Reply belongs: close.
//   - R: the peer rejected; the error is a *RejectError with its private
//     data (after the IRD/ORD block of an enhanced Reply).
//   - A Reply Rev above the Request's, or an IRD/ORD block (or P2P) that
//     was not asked for: Terminate 0x04. A Rev 1 Reply to a Rev 2 Request
//     is accepted, without IRD/ORD negotiation.
//   - Extension bits not offered: Terminate 0x04.
//   - The Responder's ORD above the Initiator's IRD: Terminate 0x06
//     (0x3FFF in a Reply field means "not negotiated" and is never
//     compared).
//   - P2P: the Reply must name exactly one RTR type that was offered (a
//     Write RTR is taken even if not offered: Linux siw picks it whatever
//     was offered), else Terminate 0x07; a Read RTR with the Responder's
//     IRD 0 is Terminate 0x06. A Reply without P2P is accepted without
//     an RTR unless cfg.RequireP2P (then Terminate 0x07).
func DecideInitiator(req, rep *Frame, cfg *Config) InitiatorDecision {
	var d InitiatorDecision
	if !rep.Reply {
		d.Action, d.Err = ActionClose, ErrBadKey
		return d
	}
	if rep.Flags&FlagReject != 0 {
		d.Action = ActionReject
		d.Err = &RejectError{Rev: rep.Rev, PrivateData: rep.ULPData()}
		return d
	}
	p := &d.Params
	p.Initiator = true
	p.Rev = rep.Rev
	p.CRC = req.Flags&FlagCRC != 0 || rep.Flags&FlagCRC != 0
	p.SendMarkers = rep.Flags&FlagMarkers != 0
	p.RecvMarkers = req.Flags&FlagMarkers != 0
	p.IRD, p.ORD = cfg.IRD, cfg.ORD
	terminate := func(err error) InitiatorDecision {
		d.Action, d.Err = ActionTerminate, err
		return d
	}

	if rep.Rev > req.Rev {
		return terminate(ErrInvalidReply)
	}
	offered, answered := req.Flags.Ext(), rep.Flags.Ext()
	if answered&^offered != 0 {
		return terminate(ErrUnofferedExtension)
	}
	p.Extensions = answered.Normalize()
	if req.Flags&FlagEchoProbe != 0 && rep.Flags&FlagEchoProbe != 0 {
		// The Responder copied the Request's reserved bits (Linux siw):
		// its extension bits are an echo, not an answer.
		p.Extensions, p.EchoedFlags = 0, true
	}
	if cfg.DeclarePeerExtensions {
		p.Extensions = (cfg.Extensions.Normalize() & cfg.PeerExtensions.Normalize()).Normalize()
	}

	reqBlk, reqEnh := req.IRDORD()
	repBlk, repEnh := rep.IRDORD()
	switch {
	case repEnh && !reqEnh:
		return terminate(ErrInvalidReply)
	case !repEnh:
		if reqBlk.P2P && cfg.RequireP2P {
			return terminate(ErrNoRTRModel)
		}
		return d
	}
	p.Enhanced = true
	p.PeerIRD, p.PeerORD = repBlk.IRD, repBlk.ORD
	if repBlk.P2P && !reqBlk.P2P {
		return terminate(ErrInvalidReply)
	}
	if repBlk.ORD != IRDORDMax && repBlk.ORD > reqBlk.IRD {
		return terminate(ErrInsufficientIRD)
	}
	if repBlk.IRD != IRDORDMax {
		p.ORD = min(p.ORD, repBlk.IRD)
	}
	if !reqBlk.P2P {
		return d
	}
	if !repBlk.P2P {
		if cfg.RequireP2P {
			return terminate(ErrNoRTRModel)
		}
		return d
	}
	rtr := repBlk.RTR
	if !rtrSingle(rtr) || (rtr&reqBlk.RTR == 0 && rtr != RTRWrite) {
		return terminate(ErrNoRTRModel)
	}
	if rtr == RTRRead {
		if repBlk.IRD == 0 {
			return terminate(ErrInsufficientIRD)
		}
		p.RTRCredit = cfg.ORD == 0
	}
	p.P2P, p.RTR = true, rtr
	return d
}
