package rdmap

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// sendOpcode returns the wire opcode of a Send WR: its flags pick the
// variant (RFC 5040 §4.5 Table 3; the V2 draft's Send with Immediate).
func sendOpcode(wr *SendWR) wire.Opcode {
	se, inv := wr.Flags&rdma.Solicited != 0, wr.Flags&rdma.Invalidate != 0
	ops := [2][2]wire.Opcode{{wire.OpSend, wire.OpSendInv}, {wire.OpSendSE, wire.OpSendSEInv}}
	if wr.Flags&rdma.WithImmediate != 0 {
		ops = [2][2]wire.Opcode{{wire.OpSendImm, wire.OpSendInvImm}, {wire.OpSendSEImm, wire.OpSendSEInvImm}}
	}
	return ops[b2i(se)][b2i(inv)]
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendSegment appends the current message's next FPDU.
func (c *Core) appendSegment() {
	t := &c.tx
	m := &t.cur
	h := wire.DDPHeader{Version: wire.DDPVersion}
	switch {
	case m.kind == txResp && m.r.kind == irqReadV2:
		if m.off == 0 {
			m.msn = t.msn[wire.QNResponse]
			t.msn[wire.QNResponse]++
		}
		h.Control = wire.MakeRDMAPControl(c.rv, wire.OpReadV2Response)
		h.QN, h.MSN, h.MO = wire.QNResponse, m.msn, uint32(m.off)
	case m.kind == txResp:
		h.Tagged = true
		h.Control = wire.MakeRDMAPControl(c.rv, wire.OpReadResponse)
		h.STag, h.TO = m.r.sinkSTag, m.r.sinkTO+m.off
	default:
		wr := &m.e.wr
		switch {
		case sendImm(wr) && m.immDone:
			c.appendSendImmLast(m)
			return
		case wr.Op == rdma.OpReadV2:
			c.appendReadV2Request(m)
			return
		case atomic(wr):
			c.appendAtomicRequest(m)
			return
		case immediate(wr), wr.Op == rdma.OpWrite && m.immDone:
			c.appendImmediate(m)
			return
		case read(wr):
			c.appendReadRequest(m)
			return
		case wr.Op == rdma.OpWrite:
			h.Tagged = true
			h.Control = wire.MakeRDMAPControl(c.rv, wire.OpWrite)
			h.STag, h.TO = wr.Remote.STag, wr.Remote.TO+m.off
		default: // the Sends, with or without Immediate
			h.Control = wire.MakeRDMAPControl(c.rv, sendOpcode(wr))
			h.QN, h.MSN, h.MO = wire.QNSend, m.msn, uint32(m.off)
			if invalidates(wr) {
				h.InvSTag = wr.InvalidateSTag
			}
		}
	}
	n := min(m.size-m.off, uint64(c.p.MULPDU-h.Len()))
	h.Last = m.off+n == m.size
	sendImm := m.kind == txSQ && sendImm(&m.e.wr)
	if sendImm {
		h.Last = false // the immediate segment carries L=1
	}
	hdr := wire.AppendDDPHeader(t.hdr[:0], &h)
	if !c.appendPayload(m, hdr, n) {
		return
	}
	m.off += n
	switch {
	case m.off < m.size:
	case m.kind == txResp:
		c.respDone()
	case sendImm, writeImm(&m.e.wr):
		m.immDone = true // the immediate follows (this segment has L=0, or was the Write's)
	default:
		c.sqMsgDone()
	}
}

// appendPayload appends one FPDU of header hdr and the current message's
// next n payload octets: a response's source (copied with CRC, or when
// small; else referenced), an inline payload, or the SGL: copied
// (small messages, one FPDU) or referenced under the message's leases.
// Every octet read from registered memory is read under a transient pin
// (PinLeased for leased bytes). It reports false if the FPDU could not be
// appended (the QP failed).
func (c *Core) appendPayload(m *txMsg, hdr []byte, n uint64) bool {
	t := &c.tx
	switch {
	case n == 0:
		return c.emit(hdr, true)
	case m.kind == txResp:
		r := m.r
		if !r.region.PinLeased(r.gen, c.holder) {
			c.Fail(ErrLeaseRevoked)
			return false
		}
		ok := c.emit(hdr, c.respCopy(r), r.src[m.off:m.off+n])
		r.region.Unpin(r.gen)
		return ok
	case m.e.inline != nil:
		return c.emit(hdr, false, m.e.inline[m.off:m.off+n])
	}
	e := m.e
	p := c.sglPieces(m, n)
	for k, i := range t.pinned {
		s := &e.sgl[i]
		if m.copy && s.Region.Pin(e.gens[i]) || !m.copy && s.Region.PinLeased(e.gens[i], c.holder) {
			continue
		}
		c.unpinSGL(e, t.pinned[:k])
		if m.copy {
			c.failWR(e) // invalidated before its only FPDU was appended
		} else {
			c.Fail(ErrLeaseRevoked)
		}
		return false
	}
	ok := c.emit(hdr, m.copy, p...)
	c.unpinSGL(e, t.pinned)
	return ok
}

// unpinSGL ends the transient pins of the SGEs idx of e.
func (c *Core) unpinSGL(e *sqEntry, idx []int) {
	for _, i := range idx {
		e.sgl[i].Region.Unpin(e.gens[i])
	}
}

// sglPieces returns the next n payload octets of m as slices of its SGL,
// advancing the cursor, and records in tx.pinned the SGEs they come from.
// No octet is copied.
func (c *Core) sglPieces(m *txMsg, n uint64) [][]byte {
	t := &c.tx
	p, idx := t.pieces[:0], t.pinned[:0]
	for n > 0 {
		s := &m.e.sgl[m.sge]
		b := s.bytes()
		k := min(uint64(len(b))-m.sgOff, n)
		if k > 0 {
			p = append(p, b[m.sgOff:m.sgOff+k])
			idx = append(idx, m.sge)
		}
		n -= k
		m.sgOff += k
		if m.sgOff == uint64(len(b)) {
			m.sge++
			m.sgOff = 0
		}
	}
	t.pieces, t.pinned = p, idx
	return p
}

// sqMsgDone: the current send-queue message's last FPDU was appended. A
// message that is not answered by the peer completes once that FPDU is
// consumed; its leases end then too.
func (c *Core) sqMsgDone() {
	t := &c.tx
	e := t.cur.e
	t.cur = txMsg{}
	if e.leased {
		c.sealLeases()
	}
	if !outbound(&e.wr) {
		t.events.push(txEvent{at: t.appended, kind: evSent, seq: e.seq})
	}
}

// lastHdr returns, in tx.hdr, the DDP header of the last (or only)
// segment of an untagged message.
func (c *Core) lastHdr(op wire.Opcode, qn, msn, mo, invSTag uint32) []byte {
	h := wire.DDPHeader{
		Version: wire.DDPVersion, Last: true, Control: wire.MakeRDMAPControl(c.rv, op),
		InvSTag: invSTag, QN: qn, MSN: msn, MO: mo,
	}
	return wire.AppendDDPHeader(c.tx.hdr[:0], &h)
}

// emitLast appends b, the last FPDU of the current send-queue message.
func (c *Core) emitLast(b []byte) {
	if c.emit(b, true) {
		c.sqMsgDone()
	}
}

// appendReadRequest appends the Read Request of m (one segment, QN 1).
func (c *Core) appendReadRequest(m *txMsg) {
	rr := wire.ReadRequest{SinkSTag: m.e.sinkSTag, SinkTO: m.e.sinkTO, Size: uint32(m.e.size),
		SrcSTag: m.e.wr.Remote.STag, SrcTO: m.e.wr.Remote.TO}
	c.emitLast(wire.AppendReadRequest(c.lastHdr(wire.OpReadRequest, wire.QNReadReq, m.msn, 0, 0), &rr))
}

// appendReadV2Request appends a Read V2 Request (one segment, QN 1).
func (c *Core) appendReadV2Request(m *txMsg) {
	rr := wire.ReadV2Request{Size: uint32(m.size), SrcSTag: m.e.wr.Remote.STag, SrcTO: m.e.wr.Remote.TO}
	c.emitLast(wire.AppendReadV2Request(c.lastHdr(wire.OpReadV2Request, wire.QNReadReq, m.msn, 0, 0), &rr))
}

// appendAtomicRequest appends the Atomic Request of m (one segment, QN 1);
// its Request Identifier is the WR's send-queue sequence number.
func (c *Core) appendAtomicRequest(m *txMsg) {
	wr := &m.e.wr
	ar := wire.AtomicRequest{
		RequestID: uint32(m.e.seq), STag: wr.Remote.STag, TO: wr.Remote.TO,
	}
	if wr.Op == rdma.OpCompareSwap {
		ar.AOpCode = wire.AOpCmpSwap
		ar.AddSwapData, ar.AddSwapMask = wr.Swap, wr.SwapMask
		ar.CompareData, ar.CompareMask = wr.Compare, wr.CompareMask
	} else {
		ar.AOpCode = wire.AOpFetchAdd
		ar.AddSwapData, ar.AddSwapMask = wr.Add, wr.AddMask
		ar.CompareMask = ^uint64(0) // RFC 7306 §5.2.1: all ones for FetchAdd
	}
	c.emitLast(wire.AppendAtomicRequest(c.lastHdr(wire.OpAtomicRequest, wire.QNReadReq, m.msn, 0, 0), &ar))
}

// appendImmediate appends the Immediate Data message of m (RFC 7306 §6):
// alone, or after a Write's last segment.
func (c *Core) appendImmediate(m *txMsg) {
	op := wire.OpImmediate
	if m.e.wr.Flags&rdma.Solicited != 0 {
		op = wire.OpImmediateSE
	}
	c.emitLast(binary.BigEndian.AppendUint64(c.lastHdr(op, wire.QNSend, m.msn, 0, 0), m.e.wr.Immediate))
}

// appendSendImmLast appends the last segment of a Send with Immediate: the
// 8 immediate bytes at MO = the payload length (V2 draft, project choice).
func (c *Core) appendSendImmLast(m *txMsg) {
	var inv uint32
	if invalidates(&m.e.wr) {
		inv = m.e.wr.InvalidateSTag
	}
	b := c.lastHdr(sendOpcode(&m.e.wr), wire.QNSend, m.msn, uint32(m.size), inv)
	c.emitLast(binary.BigEndian.AppendUint64(b, m.e.wr.Immediate))
}
