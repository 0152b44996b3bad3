package engine

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// RFC 7306 atomics. The requester sends an Atomic Request on QN 1, sharing
// its MSN sequence and the ORD credits with Read Requests, and completes
// the WR when the Atomic Response (QN 3, its own MSN sequence) carrying the
// same request identifier arrives. The responder validates the target,
// performs the operation in arrival order (after the FPDU's CRC was
// checked) on the 8 aligned bytes with sync/atomic — atomic with respect to
// every QP of the Device and to the local accessors — and queues the
// response behind earlier Read Responses, sharing IRD with them.

// appendAtomicRequest appends the Atomic Request of m (one segment).
func (qp *QP) appendAtomicRequest(m *txMsg) error {
	t := &qp.tx
	wr := &m.e.wr
	h := wire.DDPHeader{
		Version: wire.DDPVersion, Last: true,
		Control: wire.MakeRDMAPControl(qp.rv, wire.OpAtomicRequest),
		QN:      wire.QNReadReq, MSN: m.msn,
	}
	ar := wire.AtomicRequest{
		RequestID: uint32(m.e.seq), STag: wr.RemoteSTag, TO: wr.RemoteTO,
		AddSwapData: wr.Data, AddSwapMask: wr.Mask,
	}
	if wr.Op == OpCmpSwap {
		ar.AOpCode = wire.AOpCmpSwap
		ar.CompareData, ar.CompareMask = wr.Compare, wr.CompareMask
	} else {
		ar.AOpCode = wire.AOpFetchAdd
		ar.CompareMask = ^uint64(0) // RFC 7306 §5.2.1: all ones for FetchAdd
	}
	b := wire.AppendDDPHeader(t.hdr[:0], &h)
	b = wire.AppendAtomicRequest(b, &ar)
	return qp.appendFPDU(b)
}

// appendAtomicResponse appends the Atomic Response of r (QN 3).
func (qp *QP) appendAtomicResponse(r *irqEntry) error {
	t := &qp.tx
	h := wire.DDPHeader{
		Version: wire.DDPVersion, Last: true,
		Control: wire.MakeRDMAPControl(qp.rv, wire.OpAtomicResponse),
		QN:      wire.QNResponse, MSN: t.msn[wire.QNResponse],
	}
	t.msn[wire.QNResponse]++
	b := wire.AppendDDPHeader(t.hdr[:0], &h)
	b = wire.AppendAtomicResponse(b, &wire.AtomicResponse{RequestID: r.reqID, OriginalValue: r.orig})
	return qp.appendFPDU(b)
}

// rxAtomicRequest accepts an Atomic Request: MSN (shared with Read
// Requests), IRD, the operation code and the target are checked now; the
// operation itself runs once the FPDU's CRC has been verified. Errors
// carry the DDP header and no RDMA header (RFC 7306 §8.1).
func (qp *QP) rxAtomicRequest(r *fpdu.Reader, h *wire.DDPHeader, rest, n int) error {
	rx := &qp.rx
	if rest != wire.AtomicRequestLen {
		return qp.termDDP(wire.ErrShortRDMAPHeader, h, n)
	}
	b := rx.hdr[wire.UntaggedHdrLen : wire.UntaggedHdrLen+wire.AtomicRequestLen]
	if err := r.Read(b); err != nil {
		return err
	}
	ar, err := wire.ParseAtomicRequest(b)
	if err != nil {
		return qp.termDDP(err, h, n) // unknown AOpCode: RDMAP/2/0x06
	}
	if h.MSN != rx.msn[wire.QNReadReq] {
		return qp.termDDP(wire.NewProtocolError("Atomic Request MSN out of range", wire.TermDDPMSNRange), h, n)
	}
	qp.mu.Lock()
	full := qp.irdInUse >= qp.p.IRD
	qp.mu.Unlock()
	if full {
		return qp.termDDP(ErrIRDExceeded, h, n)
	}
	region, why := qp.cfg.Table.AcquireAtomic(mem.STag(ar.STag), qp.cfg.PD, ar.TO)
	if why != mem.OK {
		return qp.termDDP(placementError(why.RDMAPCode(), why), h, n)
	}
	rx.msn[wire.QNReadReq]++
	rx.atomic, rx.atomicRegion = ar, region
	rx.after = afterAtomic
	return nil
}

// doAtomic performs the accepted Atomic Request and queues its response.
func (qp *QP) doAtomic() {
	rx := &qp.rx
	ar, region := &rx.atomic, rx.atomicRegion
	var orig uint64
	if ar.AOpCode == wire.AOpCmpSwap {
		orig = region.AtomicCmpSwap(ar.TO, ar.CompareData, ar.CompareMask, ar.AddSwapData, ar.AddSwapMask)
	} else {
		orig = region.AtomicFetchAdd(ar.TO, ar.AddSwapData, ar.AddSwapMask)
	}
	region.Release()
	rx.atomicRegion = nil
	qp.mu.Lock()
	qp.irq.push(irqEntry{atomic: true, reqID: ar.RequestID, orig: orig})
	qp.irdInUse++
	qp.mu.Unlock()
	qp.kick()
}

// rxAtomicResponse matches an Atomic Response to this side's oldest
// outstanding request, which must be an atomic with the same identifier.
func (qp *QP) rxAtomicResponse(r *fpdu.Reader, h *wire.DDPHeader, rest, n int) error {
	rx := &qp.rx
	if rest != wire.AtomicResponseLen {
		return qp.termDDP(wire.ErrShortRDMAPHeader, h, n)
	}
	b := rx.hdr[wire.UntaggedHdrLen : wire.UntaggedHdrLen+wire.AtomicResponseLen]
	if err := r.Read(b); err != nil {
		return err
	}
	resp, err := wire.ParseAtomicResponse(b)
	if err != nil {
		return qp.termDDP(err, h, n)
	}
	if h.MSN != rx.msn[wire.QNResponse] {
		return qp.termDDP(wire.NewProtocolError("Atomic Response MSN out of range", wire.TermDDPMSNRange), h, n)
	}
	qp.mu.Lock()
	var e *sqEntry
	if qp.orq.len() > 0 {
		e = &qp.sq[*qp.orq.at(0)%uint64(len(qp.sq))]
	}
	qp.mu.Unlock()
	if e == nil || !e.wr.Op.atomic() {
		return qp.termDDP(ErrUnexpectedAtomicResponse, h, n)
	}
	if resp.RequestID != uint32(e.seq) {
		return qp.termDDP(ErrAtomicResponseID, h, n)
	}
	rx.msn[wire.QNResponse]++
	rx.atomicOrig = resp.OriginalValue
	rx.after = afterAtomicDone
	return nil
}

// completeAtomic completes the oldest outstanding request, an atomic,
// storing the original value in the completion and in its result SGE.
func (qp *QP) completeAtomic() {
	qp.mu.Lock()
	seq := *qp.orq.at(0)
	qp.orq.pop()
	e := &qp.sq[seq%uint64(len(qp.sq))]
	e.original = qp.rx.atomicOrig
	if len(e.wr.SGL) == 1 {
		if b := e.wr.SGL[0].bytes(); len(b) >= 8 {
			binary.NativeEndian.PutUint64(b, e.original)
		}
	}
	e.complete = true
	qp.advanceCompletionsLocked()
	qp.mu.Unlock()
	qp.kick() // an ORD credit is free
}
