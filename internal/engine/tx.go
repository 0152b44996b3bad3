package engine

import (
	"sync"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// Transmit path.
//
// One goroutine at a time holds the transmit role and is the only user of
// the fpdu Writer and of the tx fields below mu. A poster takes the role
// when it is free and sends up to inlineBudget bytes itself, so a small
// operation is written by the posting goroutine with no hand-off; what is
// left (a large message, or work queued by the receive goroutine, which must
// never block on the socket) is passed to the QP's transmit goroutine.
type txState struct {
	mu          sync.Mutex
	busy        bool       // some goroutine holds the transmit role
	pendingWork bool       // work was queued while the role was held
	cond        *sync.Cond // signalled when busy goes false
	wake        chan struct{}

	// Owned by the holder of the transmit role.
	msn    [4]uint32 // next MSN to send per QN
	cur    txMsg
	hdr    [wire.UntaggedHdrLen + 64]byte
	pieces [][]byte
	batch  int // payload bytes appended since the last flush
	stop   bool
	// pend are messages whose last segment is in the Writer but not yet
	// flushed: small messages batched into one writev, or a TryFlush that
	// left them queued. They count as sent after the next successful
	// flush.
	pend  []txMsg
	final bool // guarded by mu: the role was taken for good (teardown)
}

const (
	inlineBudget = 64 << 10 // bytes a poster sends itself before handing off
	batchBytes   = 1 << 20  // payload bytes per writev batch (a raw TCP application writes 1 MiB)
	// batchMsgs is the most complete messages one writev carries: small
	// messages queued together share a system call (one per message
	// would cap 64-byte Sends near the syscall rate).
	batchMsgs = 64
)

func (t *txState) init() {
	t.wake = make(chan struct{}, 1)
	t.cond = sync.NewCond(&t.mu)
	t.pieces = make([][]byte, 0, 16)
	t.pend = make([]txMsg, 0, batchMsgs)
}

// txKind says what a txMsg is.
type txKind uint8

const (
	txNone     txKind = iota
	txSQ              // a send-queue WR
	txResponse        // a Read Response to the peer's Read Request
)

// txMsg is the message being transmitted, segment by segment.
type txMsg struct {
	kind  txKind
	e     *sqEntry  // txSQ
	r     *irqEntry // txResponse, until its last segment is written
	off   uint64    // payload bytes already segmented
	size  uint64
	msn   uint32
	sge   int    // cursor into the SGL: index
	sgOff uint64 // and offset within that SGE
	// immDone: a Write with Immediate's Write part has been segmented;
	// the Immediate Data message is next.
	immDone bool
	// pin: a txResponse whose last segment is written has left the IRQ
	// (responseWritten); its source stays pinned until it is sent.
	pin *mem.Region
}

// takeRole takes the transmit role if it is free. If another goroutine
// holds it, it records that work is waiting (the holder looks again before
// it lets go) and returns false.
func (qp *QP) takeRole() bool {
	t := &qp.tx
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busy {
		t.pendingWork = true
		return false
	}
	t.busy = true
	return true
}

// kick makes sure someone transmits the queued work. Posters and the
// receive goroutine call it: if the role is free the caller takes it and
// sends small messages itself without blocking (pumpTry); anything that
// would block, or a large message, goes to the transmit goroutine.
func (qp *QP) kick() {
	if !qp.takeRole() {
		return
	}
	if qp.pumpTry(inlineBudget) {
		qp.handOff()
		return
	}
	qp.releaseTx()
}

// kickAsync asks the transmit goroutine to send queued work (a Terminate,
// which is written with a blocking flush).
func (qp *QP) kickAsync() {
	if qp.takeRole() {
		qp.handOff()
	}
}

// handOff passes the held transmit role to the transmit goroutine.
func (qp *QP) handOff() {
	select {
	case qp.tx.wake <- struct{}{}:
	default:
	}
}

// releaseTx gives up the transmit role, unless work arrived meanwhile, in
// which case the role goes to the transmit goroutine.
func (qp *QP) releaseTx() {
	t := &qp.tx
	t.mu.Lock()
	if t.pendingWork {
		t.pendingWork = false
		t.mu.Unlock()
		qp.handOff()
		return
	}
	t.busy = false
	t.cond.Broadcast()
	t.mu.Unlock()
}

// txLoop is the transmit goroutine: it runs whenever it is handed the role,
// until the QP is torn down. It outlives a stopped transmit path (after a
// Terminate) so that a role handed to it is always given back.
func (qp *QP) txLoop() {
	for {
		select {
		case <-qp.tx.wake:
		case <-qp.done:
			return
		}
		for qp.pump(-1) {
		}
		qp.releaseTx()
	}
}

// pump transmits queued work until there is none, or budget payload bytes
// were sent (budget < 0: no limit). It reports whether work is left.
func (qp *QP) pump(budget int) bool {
	t := &qp.tx
	if t.stop {
		return false
	}
	if len(t.pend) > 0 {
		if !qp.flushSent() {
			return false
		}
	}
	sent := 0
	for {
		if len(t.pend) > 0 && qp.termOrStop() && !qp.flushSent() {
			return false
		}
		if qp.sendTerminateIfDue() {
			return false
		}
		if t.cur.kind == txNone && !qp.nextMsg() {
			break
		}
		n, last, err := qp.appendSegment()
		if err != nil {
			qp.txFailed(err)
			return false
		}
		t.batch += n
		sent += n
		if last {
			// Batched with the messages that follow, if any.
			t.pend = append(t.pend, t.cur)
			t.cur = txMsg{}
			if (len(t.pend) == batchMsgs || t.batch >= batchBytes) && !qp.flushSent() {
				return false
			}
		} else if t.batch >= batchBytes && !qp.flushSent() {
			// t.batch counts what was appended since the last flush
			// (Writer.Buffered walks every queued piece: per segment, that
			// was quadratic in the segments of a batch).
			return false
		}
		if budget >= 0 && sent >= budget {
			if len(t.pend) > 0 && !qp.flushSent() {
				return false
			}
			return t.cur.kind != txNone || qp.hasWork()
		}
	}
	if len(t.pend) > 0 {
		qp.flushSent()
		return false
	}
	if err := qp.flush(); err != nil {
		qp.txFailed(err)
	}
	return false
}

func (qp *QP) flush() error {
	qp.tx.batch = 0
	if qp.cfg.OpTimeout > 0 {
		_ = qp.conn.NetConn().SetWriteDeadline(time.Now().Add(qp.cfg.OpTimeout))
	}
	return qp.conn.Writer().Flush()
}

// flushSent flushes the Writer (blocking) and marks the batched messages
// sent. It reports false if the transmit path failed.
func (qp *QP) flushSent() bool {
	if err := qp.flush(); err != nil {
		qp.txFailed(err)
		return false
	}
	qp.pendSent()
	return true
}

// pendSent marks the batched messages sent, in order: their last octets
// were accepted by the socket.
func (qp *QP) pendSent() {
	t := &qp.tx
	for i := range t.pend {
		qp.msgSent(&t.pend[i])
		t.pend[i] = txMsg{}
	}
	t.pend = t.pend[:0]
}

// termOrStop reports whether a Terminate is due or the QP left the states
// that transmit: batched messages are then flushed first, so that what
// went on the wire before the Terminate completes as sent.
func (qp *QP) termOrStop() bool {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.termDue != nil || (qp.state != StateRTS && qp.state != StateClosing)
}

// pumpTry sends queued messages of up to budget bytes each without ever
// blocking on the socket (fpdu.Writer.TryFlush). It reports whether work is
// left for the transmit goroutine: a message too large to send inline, a
// Terminate, or bytes the socket had no room for.
func (qp *QP) pumpTry(budget int) bool {
	t := &qp.tx
	if t.stop {
		return false
	}
	qp.mu.Lock()
	due := qp.termDue != nil
	qp.mu.Unlock()
	if due || t.cur.kind != txNone {
		return true
	}
	w := qp.conn.Writer()
	if len(t.pend) > 0 || w.Buffered() > 0 {
		done, err := w.TryFlush()
		if err != nil {
			qp.txFailed(err)
			return false
		}
		if !done {
			return true
		}
		qp.pendSent()
	}
	// Messages queued together are appended one after the other and go
	// out in one writev (at most batchMsgs, budget bytes).
	for sent := 0; sent < budget && len(t.pend) < batchMsgs; {
		if !qp.nextMsg() {
			break
		}
		if t.cur.size > uint64(budget) {
			// Large: the transmit goroutine sends it, after what is
			// batched.
			return true
		}
		for {
			n, last, err := qp.appendSegment()
			if err != nil {
				qp.txFailed(err)
				return false
			}
			sent += n
			if last {
				break
			}
		}
		t.pend = append(t.pend, t.cur)
		t.cur = txMsg{}
	}
	if len(t.pend) > 0 {
		done, err := w.TryFlush()
		if err != nil {
			qp.txFailed(err)
			return false
		}
		if !done {
			return true
		}
		qp.pendSent()
	}
	return qp.hasWork()
}

// hasWork reports whether a message is waiting to be started.
func (qp *QP) hasWork() bool {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.state == StateRTS && (qp.irq.len() > qp.irqSent || qp.sqNext < qp.sqTail)
}

// nextMsg picks the next message to transmit: Read Responses first (they
// unblock the peer), then the send queue in order, honouring ORD and fences.
func (qp *QP) nextMsg() bool {
	t := &qp.tx
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.state != StateRTS && qp.state != StateClosing {
		return false
	}
	if qp.irqSent < qp.irq.len() {
		r := qp.irq.at(qp.irqSent)
		qp.irqSent++
		t.cur = txMsg{kind: txResponse, r: r, size: uint64(r.size)}
		return true
	}
	if qp.sqNext == qp.sqTail {
		return false
	}
	e := &qp.sq[qp.sqNext%uint64(len(qp.sq))]
	if e.wr.Flags&Fence != 0 && qp.orq.len() > 0 {
		return false // waits for the earlier Reads to complete
	}
	if e.wr.Op.outbound() {
		if qp.orq.full() {
			qp.count(func(c *Counters) { c.ORDStalls.Add(1) })
			return false // ORD credits exhausted: queued locally
		}
		qp.orq.push(e.seq)
	}
	qp.sqNext++
	t.cur = txMsg{kind: txSQ, e: e, size: e.size}
	switch e.wr.Op {
	case OpSend, OpSendInv, OpSendSE, OpSendSEInv:
		t.cur.msn = t.msn[wire.QNSend]
		t.msn[wire.QNSend]++
	case OpSendImm, OpSendInvImm, OpSendSEImm, OpSendSEInvImm:
		t.cur.msn = t.msn[wire.QNSend]
		t.msn[wire.QNSend]++
		t.cur.immDone = e.size == 0
	case OpRead, OpReadInv, OpReadV2, OpFetchAdd, OpCmpSwap:
		t.cur.msn = t.msn[wire.QNReadReq]
		t.msn[wire.QNReadReq]++
	case OpImmediate, OpImmediateSE, OpWriteImm, OpWriteImmSE:
		t.cur.msn = t.msn[wire.QNSend]
		t.msn[wire.QNSend]++
	}
	return true
}

var sendOpcodes = [...]wire.Opcode{
	OpSend: wire.OpSend, OpSendInv: wire.OpSendInv, OpSendSE: wire.OpSendSE, OpSendSEInv: wire.OpSendSEInv,
}

// appendSegment appends the current message's next segment to the Writer.
// It returns the payload bytes in it and whether it was the last.
func (qp *QP) appendSegment() (int, bool, error) {
	t := &qp.tx
	m := &t.cur
	w := qp.conn.Writer()
	var h wire.DDPHeader
	h.Version = wire.DDPVersion
	hdr := t.hdr[:0]
	var rdmapHdr []byte
	switch {
	case m.kind == txSQ && m.e.wr.Op.sendImm() && m.immDone:
		return 0, true, qp.appendSendImmLast(m)
	case m.kind == txSQ && m.e.wr.Op == OpReadV2:
		return 0, true, qp.appendReadV2Request(m)
	case m.kind == txResponse && m.r.v2:
		if m.off == 0 {
			m.msn = t.msn[wire.QNResponse]
			t.msn[wire.QNResponse]++
		}
		h.Control = wire.MakeRDMAPControl(qp.rv, wire.OpReadV2Response)
		h.QN, h.MSN, h.MO = wire.QNResponse, m.msn, uint32(m.off)
	case m.kind == txSQ && m.e.wr.Op == OpLocalInv:
		qp.localInvalidate(m.e)
		return 0, true, nil // nothing goes on the wire
	case m.kind == txResponse && m.r.atomic:
		err := qp.appendAtomicResponse(m.r)
		qp.responseWritten(m)
		return 0, true, err
	case m.kind == txSQ && m.e.wr.Op.atomic():
		return 0, true, qp.appendAtomicRequest(m)
	case m.kind == txSQ && (m.e.wr.Op == OpImmediate || m.e.wr.Op == OpImmediateSE):
		return 0, true, qp.appendImmediate(m)
	case m.kind == txSQ && (m.e.wr.Op == OpWriteImm || m.e.wr.Op == OpWriteImmSE) && m.immDone:
		return 0, true, qp.appendImmediate(m)
	case m.kind == txResponse:
		h.Tagged = true
		h.Control = wire.MakeRDMAPControl(qp.rv, wire.OpReadResponse)
		h.STag = m.r.sinkSTag
		h.TO = m.r.sinkTO + m.off
	case m.e.wr.Op == OpWrite || m.e.wr.Op == OpWriteImm || m.e.wr.Op == OpWriteImmSE:
		h.Tagged = true
		h.Control = wire.MakeRDMAPControl(qp.rv, wire.OpWrite)
		h.STag = m.e.wr.RemoteSTag
		h.TO = m.e.wr.RemoteTO + m.off
	case m.e.wr.Op.read():
		h.Control = wire.MakeRDMAPControl(qp.rv, wire.OpReadRequest)
		h.QN, h.MSN, h.Last = wire.QNReadReq, m.msn, true
		rr := wire.ReadRequest{SrcSTag: m.e.wr.RemoteSTag, SrcTO: m.e.wr.RemoteTO, Size: uint32(m.e.size)}
		if len(m.e.wr.SGL) == 1 {
			s := &m.e.wr.SGL[0]
			rr.SinkSTag = uint32(s.Region.STag())
			rr.SinkTO = s.Region.Base() + s.Off
		}
		hdr = wire.AppendDDPHeader(hdr, &h)
		hdr = wire.AppendReadRequest(hdr, &rr)
		return 0, true, qp.appendFPDU(hdr)
	case m.e.wr.Op.sendImm():
		h.Control = wire.MakeRDMAPControl(qp.rv, sendImmOpcodes[m.e.wr.Op])
		h.QN, h.MSN, h.MO = wire.QNSend, m.msn, uint32(m.off)
		if m.e.wr.Op == OpSendInvImm || m.e.wr.Op == OpSendSEInvImm {
			h.InvSTag = m.e.wr.InvSTag
		}
	default: // the Sends
		h.Control = wire.MakeRDMAPControl(qp.rv, sendOpcodes[m.e.wr.Op])
		h.QN, h.MSN, h.MO = wire.QNSend, m.msn, uint32(m.off)
		if m.e.wr.Op == OpSendInv || m.e.wr.Op == OpSendSEInv {
			h.InvSTag = m.e.wr.InvSTag
		}
	}
	room := uint64(qp.p.MULPDU - h.Len() - len(rdmapHdr))
	n := min(m.size-m.off, room)
	h.Last = m.off+n == m.size
	if m.kind == txSQ && m.e.wr.Op.sendImm() {
		h.Last = false // the immediate segment carries L=1
	}
	hdr = wire.AppendDDPHeader(hdr, &h)
	pieces := qp.payload(m, n)
	appendFn := w.Append
	if m.kind == txResponse && qp.conn.Options().CRC {
		// The source of a Read Response is not ours to freeze: copy it so
		// the CRC matches the bytes sent even if it changes meanwhile.
		appendFn = w.AppendCopy
	}
	if err := appendFn(hdr, pieces...); err != nil {
		return 0, false, err
	}
	qp.countSent(len(hdr) + int(n))
	m.off += n
	if m.kind == txResponse && h.Last {
		qp.responseWritten(m)
	}
	if h.Last && m.kind == txSQ && (m.e.wr.Op == OpWriteImm || m.e.wr.Op == OpWriteImmSE) {
		m.immDone = true
		return int(n), false, nil // the Immediate Data message follows
	}
	if m.kind == txSQ && m.e.wr.Op.sendImm() && m.off == m.size {
		m.immDone = true
		return int(n), false, nil // the immediate segment follows (this one has L=0)
	}
	return int(n), h.Last, nil
}

// payload returns the next n payload bytes of m as slices of its buffers,
// advancing the SGL cursor. No byte is copied.
func (qp *QP) payload(m *txMsg, n uint64) [][]byte {
	t := &qp.tx
	p := t.pieces[:0]
	if n == 0 {
		return p
	}
	if m.kind == txResponse {
		p = append(p, m.r.src[m.off:m.off+n])
		t.pieces = p
		return p
	}
	if m.e.inline != nil {
		p = append(p, m.e.inline[m.off:m.off+n])
		t.pieces = p
		return p
	}
	for n > 0 {
		s := &m.e.wr.SGL[m.sge]
		b := s.bytes()
		k := min(uint64(len(b))-m.sgOff, n)
		if k > 0 {
			p = append(p, b[m.sgOff:m.sgOff+k])
		}
		n -= k
		m.sgOff += k
		if m.sgOff == uint64(len(b)) {
			m.sge++
			m.sgOff = 0
		}
	}
	t.pieces = p
	return p
}

// msgSent records that a message's last segment was handed to TCP.
func (qp *QP) msgSent(m *txMsg) {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	switch m.kind {
	case txResponse:
		if m.pin != nil {
			m.pin.Release()
			m.pin = nil
		}
	case txSQ:
		if !m.e.wr.Op.outbound() {
			m.e.complete = true
			qp.advanceCompletionsLocked()
		}
	}
}

// txFailed handles a transmit error: the connection is unusable, so it is
// closed, which also ends the receive goroutine's wait.
func (qp *QP) txFailed(err error) {
	qp.fail(&ConnectionError{Err: err}, false)
	qp.closeConn()
}

// countSent counts one FPDU of ulpdu bytes handed to the Writer.
func (qp *QP) countSent(ulpdu int) {
	qp.stats.FPDUsSent.Add(1)
	qp.stats.BytesSent.Add(uint64(ulpdu))
	if d := qp.cfg.DeviceCounters; d != nil {
		d.FPDUsSent.Add(1)
		d.BytesSent.Add(uint64(ulpdu))
	}
}

// responseWritten frees the IRD credit of response m, whose last segment
// was just handed to the Writer, and takes it out of the IRQ (it is the
// oldest entry: responses are written in order, one at a time). Slot and
// credit are freed together: the peer may send a new request as soon as
// the bytes reach the socket, before the flush (of a whole batch) returns
// and msgSent runs, and the IRQ must have room for it. m keeps the
// source's pin until it is sent.
func (qp *QP) responseWritten(m *txMsg) {
	qp.mu.Lock()
	m.pin, m.r.region = m.r.region, nil
	m.r = nil
	qp.irq.pop()
	qp.irqSent--
	qp.irdInUse--
	qp.mu.Unlock()
}
