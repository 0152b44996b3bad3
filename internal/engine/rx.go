package engine

import (
	"errors"
	"io"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// Receive path: the receive goroutine reads one FPDU at a time, validates
// every header field, places the payload straight from the socket (or the
// fpdu staging buffer) into the destination, and only after the FPDU's CRC
// has been checked (fpdu.Reader.End) completes anything.

// rxState is owned by the holder of the receive role (rxrole.go): the
// receive goroutine, or a waiter that borrowed the role.
type rxState struct {
	msn [4]uint32 // next MSN expected per QN
	hdr [wire.UntaggedHdrLen + wire.TermControlLen + 2 + wire.UntaggedHdrLen + wire.ReadRequestLen]byte

	// The untagged message being received on QN 0.
	sendActive bool
	sendMSN    uint32
	sendOp     wire.Opcode
	sendPlaced uint64
	sendEntry  *rqEntry

	// after is what to do once the FPDU's CRC has been verified.
	after  afterAction
	irqNew irqEntry

	// RFC 7306 state between a message's header and its CRC check.
	atomic       wire.AtomicRequest
	atomicRegion *mem.Region
	atomicOrig   uint64
	immOp        wire.Opcode
	immEntry     *rqEntry
	imm          uint64

	// A Send with Invalidate's STag, checked, to invalidate on completion.
	invRegion *mem.Region
	invSTag   uint32
}

type afterAction uint8

const (
	afterNothing     afterAction = iota
	afterRecvDone                // a Send's last segment: complete the receive
	afterReadDone                // a Read Response's last segment: complete the Read
	afterQueueRead               // a Read Request: queue its response
	afterAtomic                  // an Atomic Request: perform it, queue its response
	afterAtomicDone              // an Atomic Response: complete the atomic
	afterImmediate               // Immediate Data: complete the receive
	afterSendImmDone             // V2 Send with Immediate: complete the receive
	afterReadV2Done              // V2 Read V2 Response: complete the Read V2
)

// irqEntry is one Read Request of the peer, waiting for its response.
type irqEntry struct {
	sinkSTag uint32
	sinkTO   uint64
	size     uint32
	src      []byte      // the source bytes, pinned
	region   *mem.Region // nil for a zero-length Read

	// An Atomic Response to send instead (RFC 7306).
	atomic bool
	reqID  uint32
	orig   uint64
	// v2: a Read V2 Response (untagged, QN 3) rather than a tagged one.
	v2 bool
}

func (e *irqEntry) release() {
	if e.region != nil {
		e.region.Release()
		e.region = nil
	}
}

// rxLoop is the receive goroutine. When the stream fails it tears the QP
// down (see fail.go). It lends the receive role to waiters (rxrole.go)
// only after two small FPDUs in a row: a bulk stream (whose messages end
// with a short segment) gains nothing from a waiter that would hand each
// large FPDU back, and pauses at every such exchange.
func (qp *QP) rxLoop() {
	r := qp.conn.Reader()
	// An FPDU is short if it is not a full segment of a larger message:
	// under 8 KiB and under half our MULPDU (an MTU-1500 path makes every
	// segment of a bulk stream shorter than 8 KiB).
	short := min(lendMaxULPDU, qp.p.MULPDU/2)
	small := 0 // short FPDUs in a row
	for {
		if small >= 2 && r.Buffered() == 0 && qp.lendRx() {
			if err := qp.role.handErr; err != nil {
				qp.role.handErr = nil
				qp.rxFailed(err)
				return
			}
			// Read at least two FPDUs before lending again: a waiter
			// that is counted but cannot borrow must not keep the
			// socket unread.
			small = 0
			continue
		}
		n, err := qp.rxOne(r)
		if err != nil {
			qp.rxFailed(err)
			return
		}
		if n < short {
			small++
		} else {
			small = 0
		}
	}
}

// lendMaxULPDU: the receive goroutine lends its role only right after
// FPDUs whose ULPDUs were shorter than this (and than half the MULPDU).
const lendMaxULPDU = 8 << 10

// rxOne reads and handles one FPDU and returns its ULPDU length. The
// caller holds the receive role.
func (qp *QP) rxOne(r *fpdu.Reader) (int, error) {
	n, err := r.Next()
	if err != nil {
		return 0, err
	}
	qp.wd.inFPDU.Store(true)
	err = qp.rxFPDU(r, n)
	qp.wd.inFPDU.Store(false)
	qp.wd.progress.Add(1)
	qp.stats.FPDUsReceived.Add(1)
	qp.stats.BytesReceived.Add(uint64(n))
	if d := qp.cfg.DeviceCounters; d != nil {
		d.FPDUsReceived.Add(1)
		d.BytesReceived.Add(uint64(n))
	}
	return n, err
}

// rxFPDU handles one FPDU whose ULPDU is n bytes long.
func (qp *QP) rxFPDU(r *fpdu.Reader, n int) error {
	rx := &qp.rx
	rx.after = afterNothing
	hdr := rx.hdr[:]
	if err := r.Read(hdr[:2]); err != nil {
		return err
	}
	hl := wire.UntaggedHdrLen
	if hdr[0]&wire.DDPTagged != 0 {
		hl = wire.TaggedHdrLen
	}
	if n < hl {
		return wire.ErrShortDDPHeader
	}
	if err := r.Read(hdr[2:hl]); err != nil {
		return err
	}
	h, _, _ := wire.ParseDDPHeader(hdr[:hl])
	info, err := wire.ValidateDDPHeader(&h, qp.rv)
	if err != nil {
		return qp.termDDP(err, &h, n)
	}
	if err := checkSingleSegment(info.Opcode, &h); err != nil {
		return qp.termDDP(err, &h, n)
	}
	rest := n - hl
	switch info.Opcode {
	case wire.OpWrite:
		err = qp.rxWrite(r, &h, rest, n)
	case wire.OpReadResponse:
		err = qp.rxReadResponse(r, &h, rest, n)
	case wire.OpSend, wire.OpSendSE, wire.OpSendInv, wire.OpSendSEInv:
		err = qp.rxSend(r, &h, rest, n)
	case wire.OpReadRequest:
		err = qp.rxReadRequest(r, &h, rest, n)
	case wire.OpTerminate:
		return qp.rxTerminate(r, &h, rest)
	// RFC 7306 messages are processed whether or not the extension was
	// negotiated: only sending is gated (extensions.md §3.4).
	case wire.OpAtomicRequest:
		err = qp.rxAtomicRequest(r, &h, rest, n)
	case wire.OpAtomicResponse:
		err = qp.rxAtomicResponse(r, &h, rest, n)
	case wire.OpImmediate, wire.OpImmediateSE:
		err = qp.rxImmediate(r, &h, rest, n)
	case wire.OpSendImm, wire.OpSendInvImm, wire.OpSendSEImm, wire.OpSendSEInvImm:
		if h.Last {
			err = qp.rxSendImmLast(r, &h, rest, n)
		} else {
			err = qp.rxSend(r, &h, rest, n)
		}
	case wire.OpReadV2Request:
		err = qp.rxReadV2Request(r, &h, rest, n)
	case wire.OpReadV2Response:
		err = qp.rxReadV2Response(r, &h, rest, n)
	default:
		return qp.termDDP(wire.ErrUnexpectedOpcode, &h, n)
	}
	if err != nil {
		return err
	}
	if err := r.End(); err != nil {
		return err
	}
	switch rx.after {
	case afterRecvDone:
		qp.completeRecv()
	case afterReadDone:
		qp.completeRead()
	case afterQueueRead:
		qp.queueRead()
	case afterAtomic:
		qp.doAtomic()
	case afterAtomicDone:
		qp.completeAtomic()
	case afterImmediate:
		qp.completeImmediate()
	case afterSendImmDone:
		qp.completeSendImm()
	case afterReadV2Done:
		qp.completeReadV2()
	}
	return nil
}

// rxWrite places an RDMA Write segment (RFC 5040 §5.1, RFC 5041 §5.2).
func (qp *QP) rxWrite(r *fpdu.Reader, h *wire.DDPHeader, payload, n int) error {
	if payload == 0 {
		return nil // zero-length Writes (a Write RTR) are never STag-checked
	}
	dst, region, why := qp.cfg.Table.Acquire(mem.STag(h.STag), qp.cfg.PD, mem.AccessRemoteWrite, h.TO, uint64(payload))
	if why != mem.OK {
		return qp.termDDP(placementError(why.DDPCode(), why), h, n)
	}
	err := r.Read(dst)
	region.Release()
	return err
}

// rxReadResponse places a Read Response segment. It is accepted only
// against this side's oldest outstanding Read: same sink STag, inside the
// sink range, not longer than requested (otherwise a
// hostile responder could write into any buffer whose STag it guesses).
func (qp *QP) rxReadResponse(r *fpdu.Reader, h *wire.DDPHeader, payload, n int) error {
	qp.mu.Lock()
	var e *sqEntry
	if qp.orq.len() > 0 {
		seq := *qp.orq.at(0)
		e = &qp.sq[seq%uint64(len(qp.sq))]
	}
	qp.mu.Unlock()
	if e == nil || !e.wr.Op.read() {
		// Nothing outstanding, or the oldest outstanding request is an
		// atomic: its answer must come first (RFC 7306 §7 ordering).
		return qp.termDDP(ErrUnexpectedReadResponse, h, n)
	}
	var sge *SGE
	var sinkSTag uint32
	var sinkTO uint64
	if len(e.wr.SGL) == 1 {
		sge = &e.wr.SGL[0]
		sinkSTag = uint32(sge.Region.STag())
		sinkTO = sge.Region.Base() + sge.Off
	}
	if payload > 0 || e.size > 0 {
		if h.STag != sinkSTag {
			return qp.termDDP(ErrReadResponseSTag, h, n)
		}
		if h.TO != sinkTO+e.read || uint64(payload) > e.size-e.read {
			return qp.termDDP(ErrReadResponseRange, h, n)
		}
	}
	if payload > 0 {
		b := sge.bytes()
		if b == nil {
			return qp.termDDP(ErrReadResponseRange, h, n)
		}
		if err := r.Read(b[e.read : e.read+uint64(payload)]); err != nil {
			return err
		}
		e.read += uint64(payload)
	}
	if h.Last {
		if e.read != e.size {
			return qp.termDDP(ErrReadResponseShort, h, n)
		}
		qp.rx.after = afterReadDone
	}
	return nil
}

// rxSend places a Send segment into the receive buffers posted on QN 0
// (RFC 5041 §5.3): MSN, MO and length checked against the posted buffer.
func (qp *QP) rxSend(r *fpdu.Reader, h *wire.DDPHeader, payload, n int) error {
	rx := &qp.rx
	if !rx.sendActive {
		if h.MSN != rx.msn[wire.QNSend] {
			return qp.termDDP(wire.NewProtocolError("Send MSN out of range", wire.TermDDPMSNRange), h, n)
		}
		e := qp.rq.take()
		if e == nil {
			qp.count(func(c *Counters) { c.RecvQueueEmpty.Add(1) })
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
	if err := qp.placeSGL(r, rx.sendEntry.wr.SGL, uint64(h.MO), payload); err != nil {
		if errors.Is(err, errTooLong) {
			return qp.termDDP(ErrRecvTooLong, h, n)
		}
		return err
	}
	rx.sendPlaced += uint64(payload)
	if h.Last {
		if op := h.Control.Opcode(); op == wire.OpSendInv || op == wire.OpSendSEInv {
			if err := qp.checkSendInvalidate(h, n); err != nil {
				return err
			}
		}
		rx.after = afterRecvDone
	}
	return nil
}

var errTooLong = errors.New("message too long")

// placeSGL reads n payload bytes into the scatter list at message offset mo.
func (qp *QP) placeSGL(r *fpdu.Reader, sgl []SGE, mo uint64, n int) error {
	left := uint64(n)
	for i := range sgl {
		if left == 0 {
			break
		}
		s := &sgl[i]
		if mo >= uint64(s.Len) {
			mo -= uint64(s.Len)
			continue
		}
		b := s.bytes()
		if b == nil {
			return errTooLong
		}
		k := min(uint64(len(b))-mo, left)
		if err := r.Read(b[mo : mo+k]); err != nil {
			return err
		}
		left -= k
		mo = 0
	}
	if left != 0 {
		return errTooLong
	}
	return nil
}

// rxReadRequest accepts the peer's Read Request (RFC 5040 §5.2): MSN, IRD
// and the data source checked; the response is queued once the FPDU's CRC
// has been verified.
func (qp *QP) rxReadRequest(r *fpdu.Reader, h *wire.DDPHeader, rest, n int) error {
	rx := &qp.rx
	b := rx.hdr[wire.UntaggedHdrLen : wire.UntaggedHdrLen+wire.ReadRequestLen]
	if rest != wire.ReadRequestLen {
		return qp.termDDP(ErrReadRequestLength, h, n)
	}
	if err := r.Read(b); err != nil {
		return err
	}
	rr, err := wire.ParseReadRequest(b)
	if err != nil {
		return qp.termRDMA(err, h, n)
	}
	if h.MSN != rx.msn[wire.QNReadReq] {
		return qp.termRDMA(wire.NewProtocolError("Read Request MSN out of range", wire.TermDDPMSNRange), h, n)
	}
	qp.mu.Lock()
	full := qp.irdInUse >= qp.p.IRD
	qp.mu.Unlock()
	if full {
		return qp.termRDMA(ErrIRDExceeded, h, n)
	}
	e := irqEntry{sinkSTag: rr.SinkSTag, sinkTO: rr.SinkTO, size: rr.Size}
	if rr.Size > 0 { // a zero-length Read (a Read RTR) is never STag-checked
		src, region, why := qp.cfg.Table.Acquire(mem.STag(rr.SrcSTag), qp.cfg.PD, mem.AccessRemoteRead, rr.SrcTO, uint64(rr.Size))
		if why != mem.OK {
			return qp.termRDMA(placementError(why.RDMAPCode(), why), h, n)
		}
		e.src, e.region = src, region
	}
	rx.msn[wire.QNReadReq]++
	rx.irqNew = e
	rx.after = afterQueueRead
	return nil
}

// rxTerminate reads the peer's Terminate and fails the QP with it.
func (qp *QP) rxTerminate(r *fpdu.Reader, h *wire.DDPHeader, rest int) error {
	b := qp.rx.hdr[wire.UntaggedHdrLen:]
	if rest > len(b) {
		rest = len(b) // a longer Terminate carries nothing we read
	}
	if err := r.Read(b[:rest]); err != nil {
		return err
	}
	t, err := wire.ParseTerminate(b[:rest])
	te := &TerminateError{Sent: false, Code: t.Code, Layout: t.Layout, Control: t.Control}
	i := termIndex(t.Code)
	qp.count(func(c *Counters) {
		c.termRecv[i].Add(1)
		if t.Layout == wire.LayoutSiw {
			c.SiwTerminates.Add(1)
		}
	})
	if err != nil {
		te.Cause = err
	}
	if rest > 0 && err == nil && t.Code.Layer == 0 && !t.Code.Known() {
		te.Cause = wire.NewProtocolError("unknown Terminate code", t.Code)
	}
	return te
}

// completeRecv completes the receive a Send's last segment filled.
func (qp *QP) completeRecv() {
	rx := &qp.rx
	e := rx.sendEntry
	c := CQE{ID: e.wr.ID, QP: qp, Op: OpRecv, Len: uint32(rx.sendPlaced), rq: qp.rq, rqSeq: e.seq}
	if rx.sendOp == wire.OpSendSE || rx.sendOp == wire.OpSendSEInv {
		c.Flags |= Solicited
	}
	rx.sendActive, rx.sendEntry = false, nil
	rx.msn[wire.QNSend]++
	qp.doSendInvalidate(&c)
	qp.cfg.RecvCQ.push(&c)
}

// completeRead completes this side's oldest outstanding Read.
func (qp *QP) completeRead() {
	qp.mu.Lock()
	seq := *qp.orq.at(0)
	qp.orq.pop()
	e := &qp.sq[seq%uint64(len(qp.sq))]
	if e.wr.Op == OpReadInv {
		qp.mu.Unlock()
		qp.readInvalidate(e) // may wait for placements: not under qp.mu
		qp.mu.Lock()
	}
	e.complete = true
	qp.advanceCompletionsLocked()
	qp.mu.Unlock()
	qp.kick() // an ORD credit is free: queued Reads may go (never blocks)
}

// queueRead queues the response to the Read Request just received.
func (qp *QP) queueRead() {
	qp.mu.Lock()
	qp.irq.push(qp.rx.irqNew)
	qp.irdInUse++
	qp.mu.Unlock()
	qp.rx.irqNew = irqEntry{}
	qp.kick() // answered from here when the socket has room: no hand-off
}

// advanceCompletionsLocked reports the send-queue completions that are due,
// in posting order. Callers hold qp.mu.
func (qp *QP) advanceCompletionsLocked() {
	for qp.sqDone < qp.sqNext {
		e := &qp.sq[qp.sqDone%uint64(len(qp.sq))]
		if !e.complete {
			return
		}
		qp.sqDone++
		if e.txSignaled {
			e.txSignaled = false
			qp.txSignaled--
		}
		c := CQE{ID: e.wr.ID, QP: qp, Status: e.status, Op: e.wr.Op, Len: uint32(e.size), Err: e.err, sqSeq: e.seq, Original: e.original}
		if e.wr.Op.atomic() {
			c.Len = 8
		}
		switch {
		case e.wr.Waiter != nil:
			e.cqe = true
			e.wr.Waiter <- c // buffered by the waiter: never blocks
			qp.interruptPoll()
		case e.wr.Flags&Signaled != 0 || e.status != StatusSuccess:
			e.cqe = true
			qp.cfg.SendCQ.push(&c)
		}
	}
}

// rxFailed handles the end of the receive stream.
func (qp *QP) rxFailed(err error) {
	var te *TerminateError
	var pe *wire.ProtocolError
	switch {
	case errors.As(err, &te) && !te.Sent:
		qp.fail(te, false)
	case errors.As(err, &te):
		qp.fail(te, true)
	case errors.As(err, &pe):
		if pe.Code == wire.TermLLPCRC {
			qp.count(func(c *Counters) { c.CRCErrors.Add(1) })
		}
		qp.fail(&TerminateError{Sent: true, Code: pe.Code, Cause: pe}, true)
	case errors.Is(err, io.EOF) && qp.State() == StateClosing:
		qp.fail(ErrDisconnected, false)
	case errors.Is(err, io.EOF):
		qp.fail(ErrPeerDisconnected, false)
	default:
		qp.fail(&ConnectionError{Err: err}, false)
	}
	qp.teardown()
}
