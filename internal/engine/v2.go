package engine

import (
	"encoding/binary"
	"errors"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// The RDMAP Extensions V2 draft, once both sides agreed to it (every
// message then carries RDMAP version 2, qp.rv):
//
//   - Send with Immediate Data (four variants): the payload in segments with
//     L=0, then one L=1 segment with only the 8 immediate bytes at MO = the
//     payload length (docs/spec/extensions.md §2, project choice); a
//     zero-length one is the single L=1 segment.
//   - RDMA Read V2: the request names only the source; the response is
//     untagged on QN 3 (one MSN sequence with Atomic Responses), placed in
//     the scatter list the requester posted. ORD/IRD are shared with Reads
//     and atomics.

var sendImmOpcodes = [...]wire.Opcode{
	OpSendImm: wire.OpSendImm, OpSendInvImm: wire.OpSendInvImm,
	OpSendSEImm: wire.OpSendSEImm, OpSendSEInvImm: wire.OpSendSEInvImm,
}

// appendSendImmLast appends the last segment of a Send with Immediate: the
// 8 immediate bytes at MO = payload length.
func (qp *QP) appendSendImmLast(m *txMsg) error {
	t := &qp.tx
	h := wire.DDPHeader{
		Version: wire.DDPVersion, Last: true,
		Control: wire.MakeRDMAPControl(qp.rv, sendImmOpcodes[m.e.wr.Op]),
		QN:      wire.QNSend, MSN: m.msn, MO: uint32(m.size),
	}
	if m.e.wr.Op == OpSendInvImm || m.e.wr.Op == OpSendSEInvImm {
		h.InvSTag = m.e.wr.InvSTag
	}
	b := wire.AppendDDPHeader(t.hdr[:0], &h)
	b = binary.BigEndian.AppendUint64(b, m.e.wr.Imm)
	return qp.appendFPDU(b)
}

// appendReadV2Request appends a Read V2 Request (one segment, QN 1).
func (qp *QP) appendReadV2Request(m *txMsg) error {
	t := &qp.tx
	h := wire.DDPHeader{
		Version: wire.DDPVersion, Last: true,
		Control: wire.MakeRDMAPControl(qp.rv, wire.OpReadV2Request),
		QN:      wire.QNReadReq, MSN: m.msn,
	}
	b := wire.AppendDDPHeader(t.hdr[:0], &h)
	b = wire.AppendReadV2Request(b, &wire.ReadV2Request{Size: uint32(m.size), SrcSTag: m.e.wr.RemoteSTag, SrcTO: m.e.wr.RemoteTO})
	return qp.appendFPDU(b)
}

// rxSendImmLast accepts the last segment of a Send with Immediate: exactly
// the 8 immediate bytes, at MO = the payload placed so far.
func (qp *QP) rxSendImmLast(r *fpdu.Reader, h *wire.DDPHeader, rest, n int) error {
	rx := &qp.rx
	if rest != wire.ImmediateDataLen {
		return qp.termDDP(wire.ErrImmediateLength, h, n)
	}
	if !rx.sendActive {
		if h.MSN != rx.msn[wire.QNSend] {
			return qp.termDDP(wire.NewProtocolError("Send MSN out of range", wire.TermDDPMSNRange), h, n)
		}
		e := qp.rq.take()
		if e == nil {
			return qp.termDDP(ErrNoRecvBuffer, h, n)
		}
		rx.sendActive, rx.sendMSN, rx.sendOp, rx.sendPlaced, rx.sendEntry = true, h.MSN, h.Control.Opcode(), 0, e
	} else if h.MSN != rx.sendMSN {
		return qp.termDDP(wire.NewProtocolError("Send MSN out of range", wire.TermDDPMSNRange), h, n)
	} else if h.Control.Opcode() != rx.sendOp {
		return qp.termDDP(ErrSegmentOpcode, h, n)
	}
	if uint64(h.MO) != rx.sendPlaced {
		return qp.termDDP(ErrInvalidMO, h, n)
	}
	b := rx.hdr[wire.UntaggedHdrLen : wire.UntaggedHdrLen+wire.ImmediateDataLen]
	if err := r.Read(b); err != nil {
		return err
	}
	rx.imm = binary.BigEndian.Uint64(b)
	if op := h.Control.Opcode(); op == wire.OpSendInvImm || op == wire.OpSendSEInvImm {
		if err := qp.checkSendInvalidate(h, n); err != nil {
			return err
		}
	}
	rx.after = afterSendImmDone
	return nil
}

// completeSendImm completes the receive of a Send with Immediate.
func (qp *QP) completeSendImm() {
	rx := &qp.rx
	e := rx.sendEntry
	c := CQE{ID: e.wr.ID, QP: qp, Op: OpRecv, Len: uint32(rx.sendPlaced), Flags: HasImm, Imm: rx.imm, rq: qp.rq, rqSeq: e.seq}
	if rx.sendOp == wire.OpSendSEImm || rx.sendOp == wire.OpSendSEInvImm {
		c.Flags |= Solicited
	}
	rx.sendActive, rx.sendEntry = false, nil
	rx.msn[wire.QNSend]++
	qp.doSendInvalidate(&c)
	qp.cfg.RecvCQ.push(&c)
}

// rxReadV2Request accepts a Read V2 Request like a Read Request; errors carry
// the DDP header only (its RDMA header is not the 28-byte one RFC 5040's R
// bit describes).
func (qp *QP) rxReadV2Request(r *fpdu.Reader, h *wire.DDPHeader, rest, n int) error {
	rx := &qp.rx
	if rest != wire.ReadV2RequestLen {
		return qp.termDDP(wire.ErrShortRDMAPHeader, h, n)
	}
	b := rx.hdr[wire.UntaggedHdrLen : wire.UntaggedHdrLen+wire.ReadV2RequestLen]
	if err := r.Read(b); err != nil {
		return err
	}
	rr, err := wire.ParseReadV2Request(b)
	if err != nil {
		return qp.termDDP(err, h, n)
	}
	if h.MSN != rx.msn[wire.QNReadReq] {
		return qp.termDDP(wire.NewProtocolError("Read V2 Request MSN out of range", wire.TermDDPMSNRange), h, n)
	}
	qp.mu.Lock()
	full := qp.irdInUse >= qp.p.IRD
	qp.mu.Unlock()
	if full {
		return qp.termDDP(ErrIRDExceeded, h, n)
	}
	e := irqEntry{v2: true, size: rr.Size}
	if rr.Size > 0 {
		src, region, why := qp.cfg.Table.Acquire(mem.STag(rr.SrcSTag), qp.cfg.PD, mem.AccessRemoteRead, rr.SrcTO, uint64(rr.Size))
		if why != mem.OK {
			return qp.termDDP(placementError(why.RDMAPCode(), why), h, n)
		}
		e.src, e.region = src, region
	}
	rx.msn[wire.QNReadReq]++
	rx.irqNew = e
	rx.after = afterQueueRead
	return nil
}

// rxReadV2Response places a Read V2 Response segment into the scatter list
// of this side's oldest outstanding request, which must be a Read V2:
// MSN of QN 3, MO = bytes placed so far, never beyond the requested size;
// at L=1 exactly the requested size must have arrived.
func (qp *QP) rxReadV2Response(r *fpdu.Reader, h *wire.DDPHeader, rest, n int) error {
	rx := &qp.rx
	qp.mu.Lock()
	var e *sqEntry
	if qp.orq.len() > 0 {
		e = &qp.sq[*qp.orq.at(0)%uint64(len(qp.sq))]
	}
	qp.mu.Unlock()
	if e == nil || e.wr.Op != OpReadV2 {
		return qp.termDDP(ErrUnexpectedReadResponse, h, n)
	}
	if h.MSN != rx.msn[wire.QNResponse] {
		return qp.termDDP(wire.NewProtocolError("Read V2 Response MSN out of range", wire.TermDDPMSNRange), h, n)
	}
	if uint64(h.MO) != e.read {
		return qp.termDDP(ErrInvalidMO, h, n)
	}
	if uint64(rest) > e.size-e.read {
		return qp.termDDP(ErrReadV2TooLong, h, n)
	}
	if err := qp.placeSGL(r, e.wr.SGL, e.read, rest); err != nil {
		if errors.Is(err, errTooLong) {
			return qp.termDDP(ErrReadV2TooLong, h, n)
		}
		return err // the connection's own error (the stream ended, a reset)
	}
	e.read += uint64(rest)
	if h.Last {
		if e.read != e.size {
			return qp.termDDP(ErrReadV2Short, h, n)
		}
		rx.after = afterReadV2Done
	}
	return nil
}

// completeReadV2 completes this side's oldest outstanding request, a
// Read V2 whose response has been placed.
func (qp *QP) completeReadV2() {
	qp.rx.msn[wire.QNResponse]++
	qp.completeRead()
}
