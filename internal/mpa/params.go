package mpa

import "github.com/goiwarp/iwarp/internal/wire"

// Params are the parameters a completed MPA startup agreed on, from one
// side's point of view: what full operation needs to frame FPDUs
// (RFC 5044 §7.1) and what the RDMAP engine needs (RFC 6581 §5).
type Params struct {
	// Initiator is true on the side that sent the Request.
	Initiator bool
	// Rev is the MPA revision in use: the Reply's.
	Rev uint8
	// CRC is true if either frame had C set: both sides generate and
	// check CRCs. Otherwise the CRC field is sent as zero and not checked.
	CRC bool
	// SendMarkers: this side inserts markers (the peer set M).
	SendMarkers bool
	// RecvMarkers: the peer inserts markers (this side set M).
	RecvMarkers bool

	// Enhanced is true if both frames carried the RFC 6581 IRD/ORD block.
	Enhanced bool
	// IRD and ORD are this side's limits for full operation: inbound Read
	// (and Atomic) Requests it accepts, outbound ones it may have
	// outstanding. Without the block they are the configured values.
	IRD, ORD uint16
	// PeerIRD and PeerORD are the values the peer's block carried.
	PeerIRD, PeerORD uint16

	// P2P is true if peer-to-peer mode was agreed; RTR is then the chosen
	// ready-to-receive type, exchanged before Connect or Accept returned.
	P2P bool
	RTR RTR
	// RTRCredit is true if the Read RTR needed an IRD/ORD credit that the
	// configuration did not have (0): one was reserved for the RTR alone
	// and the block on the wire carried 1; IRD and ORD above keep the
	// configured 0 for full operation.
	RTRCredit bool

	// Extensions is the extension set both sides use (extensions.md §3).
	Extensions Ext
	// EchoedFlags (Initiator) is true when the Reply repeated the Request's
	// echo probe (FlagEchoProbe): the Responder copies reserved bits
	// blindly, as Linux siw does, so its extension bits were ignored.
	EchoedFlags bool
}

// rtrQN returns the untagged queue the RTR message used, if any.
func (p *Params) rtrQN() (qn uint32, ok bool) {
	if !p.P2P {
		return 0, false
	}
	switch p.RTR {
	case RTRSend:
		return wire.QNSend, true
	case RTRRead:
		return wire.QNReadReq, true
	}
	return 0, false
}

// SendMSN returns the MSN of the first message this side's engine sends on
// untagged queue qn: 2 on the queue the Initiator's Send or Read RTR used
// (that RTR had MSN 1), else 1 (RFC 5041 §5.3).
func (p *Params) SendMSN(qn uint32) uint32 {
	if q, ok := p.rtrQN(); ok && q == qn && p.Initiator {
		return 2
	}
	return 1
}

// RecvMSN returns the MSN of the first message this side's engine expects
// from the peer on untagged queue qn: 2 on the Responder for the queue the
// RTR used, else 1.
func (p *Params) RecvMSN(qn uint32) uint32 {
	if q, ok := p.rtrQN(); ok && q == qn && !p.Initiator {
		return 2
	}
	return 1
}
