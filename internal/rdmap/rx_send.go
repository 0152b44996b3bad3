package rdmap

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Untagged messages on QN 0: Sends (RFC 5040 §5.3, RFC 5041 §5.3), the V2
// Send with Immediate and RFC 7306 Immediate Data, each consuming the next
// posted receive.

// beginSend starts or continues the untagged message a segment of QN 0
// belongs to: a new message takes the next MSN and a receive; a
// continuing segment must carry its message's MSN and first opcode.
func (c *Core) beginSend(h *wire.DDPHeader) *TerminateError {
	rx := &c.rx
	switch {
	case !rx.sendActive:
		if h.MSN != rx.msn[wire.QNSend] {
			return c.termDDP(errSendMSN)
		}
		wr, gens, slot, ok := c.recv.Take()
		if !ok {
			c.stats.RecvQueueEmpty++
			return c.termDDP(ErrNoRecvBuffer)
		}
		rx.sendActive, rx.sendMSN, rx.sendOp, rx.sendPlaced = true, h.MSN, h.Control.Opcode(), 0
		rx.send = recvInUse{wr: wr, gens: gens, slot: slot}
	case h.MSN != rx.sendMSN:
		return c.termDDP(errSendMSN)
	case h.Control.Opcode() != rx.sendOp:
		return c.termDDP(ErrSegmentOpcode)
	}
	if uint64(h.MO) != rx.sendPlaced {
		return c.termDDP(ErrInvalidMO)
	}
	return nil
}

// rxSend places a Send segment (or a Send with Immediate's payload
// segment) into the receive buffers: MSN, MO and length checked against
// the posted buffer.
func (c *Core) rxSend(h *wire.DDPHeader, payload int) *TerminateError {
	rx := &c.rx
	if te := c.beginSend(h); te != nil {
		return te
	}
	sgl, gens := rx.send.wr.SGL, rx.send.gens
	if !sglFits(sgl, rx.sendPlaced, uint64(payload)) {
		return c.termDDP(ErrRecvTooLong)
	}
	if h.Last {
		if te := c.checkSendInvalidate(h); te != nil {
			return te
		}
		rx.after = afterRecvDone
	}
	mo := rx.sendPlaced
	rx.sendPlaced += uint64(payload)
	c.placeSGL(sgl, gens, mo, payload, sinkRecv)
	return nil
}

// rxSendImmLast accepts the last segment of a Send with Immediate: exactly
// the 8 immediate bytes, at MO = the payload placed so far.
func (c *Core) rxSendImmLast(h *wire.DDPHeader, body []byte, rest int) *TerminateError {
	rx := &c.rx
	if rest != wire.ImmediateDataLen {
		return c.termDDP(wire.ErrImmediateLength)
	}
	if te := c.beginSend(h); te != nil {
		return te
	}
	if te := c.checkSendInvalidate(h); te != nil {
		return te
	}
	rx.imm = binary.BigEndian.Uint64(body)
	rx.after = afterSendImmDone
	rx.d.Place(nil)
	return nil
}

// rxImmediate accepts an Immediate Data message: exactly 8 bytes
// (RDMAP/2/0xFF otherwise, project choice), the next MSN of QN 0, a posted
// receive. The 8 bytes go into the receive buffer when it holds at least
// 8 bytes (RFC 7306 §6.2) and always into the completion, so a zero-length
// receive buffer works too (verbs semantics).
func (c *Core) rxImmediate(h *wire.DDPHeader, body []byte, rest int) *TerminateError {
	rx := &c.rx
	if rest != wire.ImmediateDataLen {
		return c.termDDP(wire.ErrImmediateLength)
	}
	switch {
	case rx.sendActive && h.MSN == rx.sendMSN:
		// It names the message a Send is still placing: a continuing
		// segment of another opcode (as beginSend decides).
		return c.termDDP(ErrSegmentOpcode)
	case rx.sendActive || h.MSN != rx.msn[wire.QNSend]:
		return c.termDDP(errImmMSN)
	}
	wr, gens, slot, ok := c.recv.Take()
	if !ok {
		c.stats.RecvQueueEmpty++
		return c.termDDP(ErrNoRecvBuffer)
	}
	rx.immActive, rx.immOp, rx.imm = true, h.Control.Opcode(), binary.BigEndian.Uint64(body)
	rx.immRecv = recvInUse{wr: wr, gens: gens, slot: slot}
	rx.after = afterImmediate
	rx.d.Place(nil)
	return nil
}

// completeRecv completes the receive a Send's (or a Send with
// Immediate's) last segment filled, invalidating the STag a Send with
// Invalidate named: its completion waits until the invalidation drained.
func (c *Core) completeRecv(imm bool) {
	rx := &c.rx
	r := &rx.send
	comp := Completion{Queue: RecvQueue, Slot: r.slot, Completion: rdma.Completion{ID: r.wr.ID, Op: rdma.OpRecv, Len: int(rx.sendPlaced)}}
	switch rx.sendOp {
	case wire.OpSendSE, wire.OpSendSEInv, wire.OpSendSEImm, wire.OpSendSEInvImm:
		comp.Solicited = true
	}
	if imm {
		comp.HasImmediate, comp.Immediate = true, rx.imm
	}
	rx.sendActive, rx.send = false, recvInUse{}
	rx.msn[wire.QNSend]++
	c.pushRecv(comp, c.doSendInvalidate(&comp))
}

// completeImmediate completes the receive an Immediate Data message used,
// placing the 8 bytes (wire order) at the start of its buffer when it
// holds at least 8 bytes.
func (c *Core) completeImmediate() {
	rx := &c.rx
	r := &rx.immRecv
	comp := Completion{Queue: RecvQueue, Slot: r.slot, Completion: rdma.Completion{ID: r.wr.ID, Op: rdma.OpRecv, HasImmediate: true, Immediate: rx.imm}}
	if rx.immOp == wire.OpImmediateSE {
		comp.Solicited = true
	}
	if sglLen(r.wr.SGL) >= wire.ImmediateDataLen {
		var v [wire.ImmediateDataLen]byte
		binary.BigEndian.PutUint64(v[:], rx.imm)
		if !scatter(r.wr.SGL, r.gens, 0, v[:]) {
			c.failRecv()
			return
		}
		comp.Len = wire.ImmediateDataLen
	}
	rx.immActive, rx.immRecv = false, recvInUse{}
	rx.msn[wire.QNSend]++
	c.pushRecv(comp, nil)
}

// checkSendInvalidate validates the Invalidate STag of a Send with
// Invalidate's last segment (RFC 5040 §5.3): a valid STag of this QP's
// protection domain that may be remotely invalidated. The invalidation
// itself begins once the message is placed and its CRC checked.
func (c *Core) checkSendInvalidate(h *wire.DDPHeader) *TerminateError {
	info, _ := wire.LookupOpcode(c.rv, h.Control.Opcode())
	if !info.Invalidate {
		return nil
	}
	region, why := c.cfg.Table.CheckRemoteInvalidate(mem.STag(h.InvSTag), c.cfg.PD)
	if why != mem.InvalidateOK {
		return c.termDDP(wire.NewProtocolError(why.String(), why.TermCode()))
	}
	c.rx.invRegion, c.rx.invSTag = region, h.InvSTag
	return nil
}

// doSendInvalidate begins the invalidation a completed Send with
// Invalidate named (later messages naming the STag are refused at once)
// and records it in the completion; it returns the invalidation the
// completion waits for, if it has not drained.
func (c *Core) doSendInvalidate(comp *Completion) *mem.Invalidation {
	rx := &c.rx
	if rx.invRegion == nil {
		return nil
	}
	inv := c.beginInvalidate(rx.invRegion, rx.invSTag)
	comp.Invalidated = rx.invSTag
	rx.invRegion = nil
	return inv
}
