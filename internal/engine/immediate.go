package engine

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
)

// RFC 7306 Immediate Data: an untagged message on QN 0 that carries exactly
// 8 bytes and consumes one posted receive, like a Send. "RDMA Write with
// Immediate" is an RDMA Write followed by an Immediate Data message on the
// same stream, so its completion at the sink follows the Write's placement.

// appendImmediate appends the Immediate Data message of m.
func (qp *QP) appendImmediate(m *txMsg) error {
	t := &qp.tx
	op := wire.OpImmediate
	if m.e.wr.Op == OpImmediateSE || m.e.wr.Op == OpWriteImmSE {
		op = wire.OpImmediateSE
	}
	h := wire.DDPHeader{
		Version: wire.DDPVersion, Last: true,
		Control: wire.MakeRDMAPControl(qp.rv, op),
		QN:      wire.QNSend, MSN: m.msn,
	}
	b := wire.AppendDDPHeader(t.hdr[:0], &h)
	b = binary.BigEndian.AppendUint64(b, m.e.wr.Imm)
	return qp.appendFPDU(b)
}

// rxImmediate accepts an Immediate Data message: exactly 8 bytes
// (RDMAP/2/0xFF otherwise, project choice), the next MSN of QN 0, a posted
// receive. The 8 bytes go into the receive buffer when it holds at least
// 8 bytes (RFC 7306 §6.2) and always into the completion, so a zero-length
// receive buffer works too (verbs semantics).
func (qp *QP) rxImmediate(r *fpdu.Reader, h *wire.DDPHeader, rest, n int) error {
	rx := &qp.rx
	if rest != wire.ImmediateDataLen {
		return qp.termDDP(wire.ErrImmediateLength, h, n)
	}
	switch {
	case rx.sendActive && h.MSN == rx.sendMSN:
		// It names the message a Send is still placing: a continuing
		// segment of another opcode (as rxSend decides).
		return qp.termDDP(ErrSegmentOpcode, h, n)
	case rx.sendActive || h.MSN != rx.msn[wire.QNSend]:
		return qp.termDDP(wire.NewProtocolError("Immediate Data MSN out of range", wire.TermDDPMSNRange), h, n)
	}
	b := rx.hdr[wire.UntaggedHdrLen : wire.UntaggedHdrLen+wire.ImmediateDataLen]
	if err := r.Read(b); err != nil {
		return err
	}
	e := qp.rq.take()
	if e == nil {
		qp.count(func(c *Counters) { c.RecvQueueEmpty.Add(1) })
		return qp.termDDP(ErrNoRecvBuffer, h, n)
	}
	rx.immOp, rx.immEntry, rx.imm = h.Control.Opcode(), e, binary.BigEndian.Uint64(b)
	rx.after = afterImmediate
	return nil
}

// completeImmediate completes the receive an Immediate Data message used.
func (qp *QP) completeImmediate() {
	rx := &qp.rx
	e := rx.immEntry
	c := CQE{ID: e.wr.ID, QP: qp, Op: OpRecv, Flags: HasImm, Imm: rx.imm, rq: qp.rq, rqSeq: e.seq}
	if rx.immOp == wire.OpImmediateSE {
		c.Flags |= Solicited
	}
	if placed := placeImmediate(e.wr.SGL, rx.imm); placed {
		c.Len = wire.ImmediateDataLen
	}
	rx.immEntry = nil
	rx.msn[wire.QNSend]++
	qp.cfg.RecvCQ.push(&c)
}

// placeImmediate writes the 8 immediate bytes (wire order) at the start of
// the scatter list when it holds at least 8 bytes.
func placeImmediate(sgl []SGE, imm uint64) bool {
	var total uint64
	for i := range sgl {
		total += uint64(sgl[i].Len)
	}
	if total < wire.ImmediateDataLen {
		return false
	}
	var v [wire.ImmediateDataLen]byte
	binary.BigEndian.PutUint64(v[:], imm)
	src := v[:]
	for i := range sgl {
		if len(src) == 0 {
			break
		}
		b := sgl[i].bytes()
		k := copy(b, src)
		src = src[k:]
	}
	return true
}
