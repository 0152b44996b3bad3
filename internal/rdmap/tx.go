package rdmap

import (
	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Transmit path: TxBufs appends FPDUs to the Encoder by the RDMAP ordering
// rules (the Terminate first; the peer's Read and atomic responses, in
// request order, before the send queue; messages never interleaved), up
// to txBudget octets queued, and hands out the iovecs; TxDone consumes
// what the socket accepted, completes the sends whose last octet went and
// ends the leases of referenced payload.

const (
	// txBudget bounds the octets queued in the Encoder: TxBufs appends
	// FPDUs until that many are waiting.
	txBudget = 512 << 10
	// copyMax: Send and Write payloads up to this size, and Read
	// Responses up to it (all of them with CRC), are copied into the
	// Encoder under transient pins; larger ones are referenced under a
	// lease until they are consumed.
	copyMax = 4 << 10
)

type txKind uint8

const (
	txNone txKind = iota
	txSQ          // a send-queue WR
	txResp        // a response to the peer's Read or Read V2 Request
)

// txMsg is the message being transmitted, segment by segment.
type txMsg struct {
	kind  txKind
	e     *sqEntry  // txSQ
	r     *irqEntry // txResp: the IRQ's oldest entry
	off   uint64    // payload bytes already segmented
	size  uint64
	msn   uint32
	sge   int    // cursor into the SGL: index
	sgOff uint64 // and offset within that SGE
	// immDone: a Write with Immediate's Write part, or a Send with
	// Immediate's payload, has been segmented; the immediate is next.
	immDone bool
	// copy: the payload is copied into the Encoder under transient pins
	// (else it is referenced under leases, or inline).
	copy bool
}

type evKind uint8

const (
	evSent    evKind = iota // a send WR's last FPDU: it completes
	evRespRef               // a referenced response's last FPDU: it is generated
	evTerm                  // the Terminate
)

// txEvent is what happens once the FPDU numbered at has been consumed.
type txEvent struct {
	at   uint64
	kind evKind
	seq  uint64 // evSent
}

type txState struct {
	enc    *fpdu.Encoder
	msn    [4]uint32 // next MSN to send per QN
	cur    txMsg
	hdr    [wire.UntaggedHdrLen + wire.AtomicRequestLen + 2]byte
	pieces [][]byte
	pinned []int // SGE indices pinned for one FPDU's copy
	// appended and consumed count FPDUs handed to the Encoder and fully
	// consumed by TxDone.
	appended, consumed uint64
	events             fifo[txEvent]
	leases             fifo[leaseRec]
	// refPending counts referenced responses appended whose octets are
	// not all consumed: an atomic after them waits (RFC 7306 §7).
	refPending int
	// out: TxBufs handed out iovecs that TxDone has not yet consumed;
	// the first outPins leases are pinned (PinLeased) until then, for
	// the write that reads their referenced octets.
	out     bool
	outPins int
}

func (t *txState) init(cfg Config, p Params) {
	t.enc = fpdu.NewEncoder(cfg.Framing, cfg.TxOff)
	t.msn = [4]uint32{p.FirstSendMSN, p.FirstReadMSN, 1, 1}
	t.pieces = make([][]byte, 0, cfg.MaxSGE+1)
	t.pinned = make([]int, 0, cfg.MaxSGE)
}

// TxBufs appends to dst what to write next, as iovecs, and returns it (it
// may append nothing). The caller writes them, then calls TxDone with the
// number of octets the socket accepted, before calling TxBufs again: the
// iovecs stay valid, and the registered memory they reference stays
// pinned, until then. It must call TxDone even when the write failed (n =
// what was written, possibly 0).
func (c *Core) TxBufs(dst [][]byte) [][]byte {
	if c.state == rdma.StateError {
		return dst
	}
	t := &c.tx
	if t.out {
		return t.enc.Bufs(dst) // the same iovecs again
	}
	if c.holding() || c.terminatedByPeer() {
		return dst
	}
	c.fill()
	if t.enc.Buffered() == 0 || c.state == rdma.StateError {
		return dst
	}
	for i := 0; i < t.leases.len(); i++ {
		l := t.leases.at(i)
		if !l.r.PinLeased(l.g, c.holder) {
			c.unpinOut(i)
			c.Fail(ErrLeaseRevoked)
			return dst
		}
	}
	t.out, t.outPins = true, t.leases.len()
	return t.enc.Bufs(dst)
}

// TxDone consumes n octets of what TxBufs returned (0 <= n <= their total).
func (c *Core) TxDone(n int) {
	t := &c.tx
	if !t.out {
		return
	}
	c.unpinOut(t.outPins)
	t.out, t.outPins = false, 0
	if n > 0 {
		c.progress++
		t.consumed += uint64(t.enc.Done(n))
	}
	c.endLeases()
	if c.state == rdma.StateError {
		c.releaseTx()
		return
	}
	for t.events.len() > 0 && t.events.front().at <= t.consumed {
		ev := *t.events.front()
		t.events.pop()
		switch ev.kind {
		case evSent:
			if e := c.entry(ev.seq); !e.complete {
				e.complete = true
			}
		case evRespRef:
			t.refPending--
		case evTerm:
			c.termWritten = true
		}
	}
	c.advanceSQ()
	c.runAtomics()
	if c.rx.eofPending {
		err := c.rx.eofErr
		c.rx.eofPending, c.rx.eofErr = false, nil
		c.rxEnded(err)
		return
	}
	if c.termWritten && c.rx.ended {
		c.toError(c.err) // the peer's stream ended before the Terminate went: nothing left to drain
	}
	if c.terminatedByPeer() {
		c.releaseTx() // the peer terminated the stream while the iovecs were out
	}
}

// releaseTx drops everything queued once the QP is in ERROR, or the peer
// terminated the stream, and no iovec is in use: the Encoder is reset and
// every lease ends. The send WRs whose last octet did not go stay
// incomplete: the flush completes them.
func (c *Core) releaseTx() {
	t := &c.tx
	if t.out {
		return // TxDone does it
	}
	t.enc.Reset()
	for t.leases.len() > 0 {
		l := t.leases.front()
		l.r.EndLease(l.g, c.holder)
		t.leases.pop()
	}
	for t.events.len() > 0 {
		t.events.pop()
	}
	t.cur = txMsg{}
	t.refPending = 0
}

// WantTx reports whether TxBufs has something to hand out: queued octets,
// a Terminate, or a message that may start now.
func (c *Core) WantTx() bool {
	switch {
	case c.state == rdma.StateError || c.holding() || c.terminatedByPeer():
		return false
	case c.tx.enc.Buffered() > 0 || c.termDue != nil:
		return true
	case c.state != rdma.StateRTS && c.state != rdma.StateClosing:
		return false
	case c.tx.cur.kind != txNone:
		return true
	case c.irq.len() > 0:
		r := c.irq.at(0)
		return r.kind != irqAtomic || r.done
	case c.sqNext == c.sqTail:
		return false
	}
	e := c.entry(c.sqNext)
	if e.wr.Flags&rdma.Fence != 0 && c.orq.len() > 0 {
		return false
	}
	return !outbound(&e.wr) || !c.orq.full()
}

// holding reports whether the MPA Responder rule holds the transmit path
// back: nothing is sent before the first FPDU from the Initiator arrived
// (RFC 5044 §7.1.2; Framing.HoldSendUntilReceive).
// After the half-close nothing goes either.
func (c *Core) holding() bool {
	return c.shut || c.cfg.Framing.HoldSendUntilReceive && !c.rx.heard
}

// fill appends FPDUs until the budget is queued or nothing can go.
func (c *Core) fill() {
	t := &c.tx
	for t.enc.Buffered() < txBudget {
		if c.termDue != nil {
			c.appendTerminate()
			return
		}
		if c.state != rdma.StateRTS && c.state != rdma.StateClosing {
			return
		}
		if t.cur.kind == txNone {
			if !c.nextMsg() {
				return
			}
			continue
		}
		c.appendSegment()
	}
}

// nextMsg starts the next message: the oldest response to the peer first
// (they unblock the peer), then the send queue in order, honouring ORD and
// fences. It reports false when nothing can start now.
func (c *Core) nextMsg() bool {
	t := &c.tx
	if c.irq.len() > 0 {
		r := c.irq.at(0)
		if r.kind == irqAtomic {
			if !r.done {
				return false // it runs once earlier responses are generated
			}
			c.appendAtomicResponse(r)
			c.irq.pop()
			c.runAtomics()
			return true
		}
		c.startResponse(r)
		return true
	}
	if c.sqNext == c.sqTail {
		return false
	}
	e := c.entry(c.sqNext)
	if e.wr.Flags&rdma.Fence != 0 && c.orq.len() > 0 {
		return false // waits for the earlier Reads and atomics to complete
	}
	if outbound(&e.wr) && c.orq.full() {
		if !e.stalled {
			e.stalled = true
			c.stats.ORDStalls++
		}
		return false // ORD credits exhausted: queued locally
	}
	c.sqNext++
	if e.wr.Op == rdma.OpLocalInvalidate {
		c.localInvalidate(e)
		c.advanceSQ()
		return true
	}
	if e.wr.Op == rdma.OpBindWindow {
		c.bindWindow(e)
		c.advanceSQ()
		return true
	}
	copyMode, ok := c.prepareSources(e)
	if !ok {
		c.failWR(e)
		return true
	}
	if outbound(&e.wr) {
		c.orq.push(e.seq)
	}
	t.cur = txMsg{kind: txSQ, e: e, size: e.size, copy: copyMode}
	switch {
	case sendImm(&e.wr):
		t.cur.immDone = e.size == 0
		fallthrough
	case sendPlain(&e.wr), immediate(&e.wr), writeImm(&e.wr):
		t.cur.msn = t.msn[wire.QNSend]
		t.msn[wire.QNSend]++
	case outbound(&e.wr):
		t.cur.msn = t.msn[wire.QNReadReq]
		t.msn[wire.QNReadReq]++
	}
	return true
}

// prepareSources checks the local buffers of a send WR about to start:
// a Read's sink must still be valid (its STag goes on the wire); a large
// payload is leased for as long as its octets are referenced. It reports
// whether the payload is to be copied under transient pins instead, and
// false in ok if a buffer is no longer valid.
func (c *Core) prepareSources(e *sqEntry) (copyMode, ok bool) {
	switch {
	case read(&e.wr) && len(e.sgl) == 1:
		s := &e.sgl[0]
		if !s.Region.Pin(e.gens[0]) {
			return false, false
		}
		e.sinkSTag, e.sinkTO = uint32(s.Region.STag()), s.Region.Base()+s.Off
		s.Region.Unpin(e.gens[0])
	case !carriesPayload(&e.wr) || e.inline != nil || e.size == 0:
	case e.size <= copyMax && e.size <= uint64(c.p.MULPDU-wire.UntaggedHdrLen):
		return true, true // one FPDU, copied: nothing to lease
	default:
		t := &c.tx
		for i := range e.sgl {
			if !firstOf(e.sgl, e.gens, i) {
				continue
			}
			if !e.sgl[i].Region.Lease(e.gens[i], c.holder) {
				c.dropOpenLeases()
				return false, false
			}
			t.leases.push(leaseRec{r: e.sgl[i].Region, g: e.gens[i]})
		}
		e.leased = true
	}
	return false, true
}

// emit appends one FPDU to the Encoder (copying the payload if cp) and
// counts it. It reports false if the Encoder refused it, which fails the
// QP: the Core built a ULPDU it should not have.
func (c *Core) emit(hdr []byte, cp bool, payload ...[]byte) bool {
	t := &c.tx
	var err error
	if cp {
		err = t.enc.AppendCopy(hdr, payload...)
	} else {
		err = t.enc.Append(hdr, payload...)
	}
	if err != nil {
		c.toError(&ConnectionError{Err: err})
		return false
	}
	n := len(hdr)
	for _, p := range payload {
		n += len(p)
	}
	t.appended++
	c.stats.FPDUsSent++
	c.stats.BytesSent += uint64(n)
	return true
}
