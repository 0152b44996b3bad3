package rdmap

import (
	"bytes"
	"errors"
	"slices"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// simMonitor reads what one side writes, FPDU by FPDU, with the framing
// the peer uses (fpdu.DecodeFPDU), and checks every segment a Core sends:
// good framing (markers, CRC), a ULPDU wire.ParseULPDU accepts and no
// longer than the side's MULPDU, the RDMAP version in use, MSNs in
// sequence per queue, the segments of a message in order, nothing after a
// Terminate. It remembers the Terminate and what the hostile injection
// needs to know (message boundaries, next MSNs, the stream offset).
type simMonitor struct {
	s       *simSide
	opts    fpdu.Options // to decode: RecvMarkers as the sender sends them
	buf     []byte       // octets of the FPDU being sent
	off     uint64       // stream offset of buf[0]
	scratch []byte

	fpdus     int
	next      [4]uint32 // next MSN per QN
	open      [4]bool   // a message on this QN has begun and not ended
	mo        [4]uint32 // the MO its next segment must have
	op        [4]wire.Opcode
	tagged    bool // a tagged message has begun and not ended
	consumers int  // QN 0 messages begun (each takes a peer receive)
	term      *simTerm
	detached  bool // a hostile input replaced the side's transmitter
	// sq is the index in the side's send queue of the next WR whose
	// message must go out (messages leave in posting order); half: the
	// Write of a Write with Immediate went, its Immediate Data is next.
	sq   int
	half bool
	cur  *simWR // the WR whose message is being sent
	// respEnds: the stream offset after each response message (Read
	// Response, Atomic Response, Read V2 Response) the side sent.
	respEnds []uint64
	end      uint64 // the offset after the FPDU being checked
	// segs: every segment sent, by its DDP header (a Terminate of the
	// peer's attaches one of them; several segments may share a header).
	segs map[string][]simSeg
}

// simSeg is what a Terminate may attach of a segment: its length and the
// RDMA header (a Read Request's 28 octets).
type simSeg struct {
	n    int
	rdma string
}

// simTerm is a Terminate seen on the wire.
type simTerm struct {
	t     wire.Terminate
	msn   uint32
	ulpdu []byte
	step  int64
}

func newSimMonitor(s *simSide, send fpdu.Options) *simMonitor {
	c := &s.w.cfg
	m := &simMonitor{s: s, opts: fpdu.Options{CRC: send.CRC, RecvMarkers: send.SendMarkers}, off: c.txOff[s.idx]}
	m.next = [4]uint32{c.firstSend[s.idx], c.firstRead[s.idx], 1, 1}
	return m
}

// boundary reports whether the stream is between messages (so a hostile
// segment cannot land inside one).
func (m *simMonitor) boundary() bool {
	return len(m.buf) == 0 && !m.tagged && !m.open[0] && !m.open[1] && !m.open[2] && !m.open[3]
}

// offset is the stream offset of the next octet.
func (m *simMonitor) offset() uint64 { return m.off + uint64(len(m.buf)) }

// feed checks the octets the side just wrote.
func (m *simMonitor) feed(b []byte) {
	if m.detached {
		return
	}
	m.buf = append(m.buf, b...)
	for len(m.buf) > 0 {
		f, err := fpdu.DecodeFPDU(m.scratch[:0], m.buf, m.off, m.opts)
		if errors.Is(err, fpdu.ErrTruncated) {
			return
		}
		w := m.s.w
		if err != nil {
			w.failf("side %s sent a bad FPDU at stream offset %d: %v", m.s.name, m.off, err)
		}
		m.end = m.off + uint64(f.Size)
		m.segment(f.ULPDU)
		m.fpdus++
		m.off += uint64(f.Size)
		m.buf = append(m.buf[:0], m.buf[f.Size:]...)
	}
}

// remaining is how many more octets the FPDU being sent has, counting the
// ones queued in iov; ok is false when iov does not hold its end.
func (m *simMonitor) remaining(iov [][]byte) (int, bool) {
	b := bytes.Clone(m.buf)
	for _, v := range iov {
		b = append(b, v...)
	}
	f, err := fpdu.DecodeFPDU(nil, b, m.off, m.opts)
	if errors.Is(err, fpdu.ErrTruncated) {
		return 0, false
	}
	return f.Size - len(m.buf), true
}

// segment checks one ULPDU the side sent.
func (m *simMonitor) segment(b []byte) {
	s, w := m.s, m.s.w
	if m.term != nil {
		w.failf("side %s sent a segment after its Terminate", s.name)
	}
	u, err := wire.ParseULPDU(b)
	if err != nil {
		w.failf("side %s sent a segment wire.ParseULPDU refuses: %v (% x)", s.name, err, b[:min(len(b), 40)])
	}
	// Only segments that carry a piece of a message's data can be cut to
	// fit; a single-segment message and the immediate segment of a Send
	// with Immediate are sent whole whatever the MULPDU (the Core's lowest
	// MULPDU is below their size).
	if mul := s.core.Params().MULPDU; len(b) > mul && simSegmented(u.Opcode) && u.Header != wire.HeaderImmediate {
		w.failf("side %s sent a %d-octet %v segment, longer than its MULPDU %d", s.name, len(b), u.Opcode, mul)
	}
	rv := uint8(wire.RDMAPVersion1)
	if w.cfg.v2 {
		rv = wire.RDMAPVersion2
	}
	h := &u.DDP
	if m.segs == nil {
		m.segs = map[string][]simSeg{}
	}
	seg := simSeg{n: len(b)}
	if u.Opcode == wire.OpReadRequest {
		seg.rdma = string(b[h.Len() : h.Len()+wire.ReadRequestLen])
	}
	key := string(b[:h.Len()])
	if !slices.Contains(m.segs[key], seg) {
		m.segs[key] = append(m.segs[key], seg)
	}
	if got := h.Control.Version(); got != rv {
		w.failf("side %s sent %v with RDMAP version %d, want %d", s.name, u.Opcode, got, rv)
	}
	if h.Last && (u.Opcode == wire.OpReadResponse || u.Opcode == wire.OpAtomicResponse || u.Opcode == wire.OpReadV2Response) {
		m.respEnds = append(m.respEnds, m.end)
	}
	if h.Tagged {
		if !m.tagged && u.Opcode == wire.OpWrite {
			m.sqMessage(u.Opcode)
		}
		if h.Last && u.Opcode == wire.OpWrite {
			m.sent()
		}
		m.tagged = !h.Last
		return
	}
	q := h.QN
	if q > 3 {
		w.failf("side %s sent %v on QN %d", s.name, u.Opcode, q)
	}
	if !m.open[q] {
		if h.MSN != m.next[q] || h.MO != 0 {
			w.failf("side %s sent %v on QN %d with MSN %d MO %d, want MSN %d MO 0", s.name, u.Opcode, q, h.MSN, h.MO, m.next[q])
		}
		m.open[q], m.mo[q], m.op[q] = true, 0, u.Opcode
		if q == wire.QNSend {
			m.consumers++
		}
		if q == wire.QNSend || q == wire.QNReadReq {
			m.sqMessage(u.Opcode)
		}
	} else if h.MSN != m.next[q] || u.Opcode != m.op[q] || h.MO != m.mo[q] {
		w.failf("side %s sent a continuing %v segment on QN %d with MSN %d MO %d, want %v MSN %d MO %d", s.name, u.Opcode, q, h.MSN, h.MO, m.op[q], m.next[q], m.mo[q])
	}
	m.mo[q] += uint32(len(u.Payload))
	if h.Last {
		m.open[q] = false
		m.next[q]++
		if q == wire.QNSend || q == wire.QNReadReq {
			m.sent()
		}
	}
	if u.Opcode == wire.OpTerminate {
		m.term = &simTerm{t: u.Terminate, msn: h.MSN, ulpdu: bytes.Clone(b), step: w.now}
		w.ev(s.idx, simEvTerminate, uint64(u.Terminate.Code.Layer())<<16|uint64(u.Terminate.Code.Type())<<8|uint64(u.Terminate.Code.Code()), 0)
		if w.cfg.clean() {
			w.failf("side %s sent Terminate %v in a run without faults or risky work (its error: %v)", s.name, u.Terminate.Code, s.core.Err())
		}
	}
}

// simSegmented reports whether a message of opcode op may be cut into
// segments (the others are one segment whatever their size).
func simSegmented(op wire.Opcode) bool {
	switch op {
	case wire.OpWrite, wire.OpReadResponse, wire.OpSend, wire.OpSendInv, wire.OpSendSE, wire.OpSendSEInv,
		wire.OpReadV2Response, wire.OpSendImm, wire.OpSendInvImm, wire.OpSendSEImm, wire.OpSendSEInvImm:
		return true
	}
	return false
}

// sqMessage checks a message of the send queue that begins on the wire:
// it is the next WR's (in posting order, Local Invalidates aside), with
// its opcode, and a fenced WR goes only once no Read or atomic of the
// side is outstanding (RFC 5040 §5.5).
func (m *simMonitor) sqMessage(op wire.Opcode) {
	s, w := m.s, m.s.w
	for m.sq < len(s.sq) && s.sq[m.sq].op == rdma.OpLocalInvalidate {
		m.sq++
	}
	if m.sq >= len(s.sq) {
		w.failf("side %s sent a %v message, but no posted WR is left to send", s.name, op)
	}
	rec := s.sq[m.sq]
	want := simWireOp(rec.op, rec.flags, m.half)
	if op != want {
		w.failf("side %s sent a %v message where its next WR (%d, %v) needs %v: messages out of posting order", s.name, op, rec.id, rec.op, want)
	}
	if !m.half && rec.flags&rdma.Fence != 0 {
		m.fenced(rec)
	}
	m.cur = rec
	if writeImm(rec.shape()) && !m.half {
		m.half = true
		return
	}
	m.half = false
	m.sq++
}

// sent records that the current send-queue message's last octet was
// written (a Write with Immediate's after its second message).
func (m *simMonitor) sent() {
	if m.cur != nil && !m.half {
		m.cur.sent = true
	}
}

// fenced checks that a fenced WR's message leaves only after the
// responses to every earlier Read and atomic of the side were received
// whole.
func (m *simMonitor) fenced(rec *simWR) {
	s := m.s
	earlier := 0
	for _, e := range s.sq[:rec.seq] {
		if outbound(e.shape()) {
			earlier++
		}
	}
	got, base := 0, s.w.cfg.txOff[s.peer.idx]
	for _, end := range s.peer.mon.respEnds {
		if end-base <= s.in.read {
			got++
		}
	}
	if got < earlier {
		s.w.failf("side %s sent fenced %v WR %d with %d of the responses to its %d earlier Reads and atomics received", s.name, rec.op, rec.id, got, earlier)
	}
}

// simWireOp is the opcode of a WR's message (of its second message, the
// Immediate Data of a Write with Immediate, with second): its opcode and
// its variant flags pick it.
func simWireOp(op rdma.Opcode, flags rdma.SendFlags, second bool) wire.Opcode {
	se := flags&rdma.Solicited != 0
	switch op {
	case rdma.OpSend:
		sends := map[rdma.SendFlags]wire.Opcode{
			0: wire.OpSend, rdma.Solicited: wire.OpSendSE, rdma.Invalidate: wire.OpSendInv, rdma.Solicited | rdma.Invalidate: wire.OpSendSEInv,
			rdma.WithImmediate: wire.OpSendImm, rdma.Invalidate | rdma.WithImmediate: wire.OpSendInvImm,
			rdma.Solicited | rdma.WithImmediate: wire.OpSendSEImm, rdma.Solicited | rdma.Invalidate | rdma.WithImmediate: wire.OpSendSEInvImm,
		}
		if o, ok := sends[flags&simVariantFlags]; ok {
			return o
		}
	case rdma.OpWrite:
		switch {
		case flags&rdma.WithImmediate == 0, !second:
			return wire.OpWrite
		case !se:
			return wire.OpImmediate
		}
		return wire.OpImmediateSE
	case rdma.OpRead:
		return wire.OpReadRequest
	case rdma.OpFetchAdd, rdma.OpCompareSwap:
		return wire.OpAtomicRequest
	case rdma.OpImmediate:
		if se {
			return wire.OpImmediateSE
		}
		return wire.OpImmediate
	case rdma.OpReadV2:
		return wire.OpReadV2Request
	}
	return 0xFF
}
