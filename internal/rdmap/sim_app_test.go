package rdmap

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// The simulated application: what each side posts, and what it expects of
// every WR it posts (the model the ledger checks completions against).

// simWR is one WR the application tried to post, and then one it posted.
type simWR struct {
	s       *simSide
	id      uint64
	recv    bool
	seq     int
	op      Op
	flags   Flags
	sgl     []SGE
	n       int    // octets sent (Send, Write), read (Read), or a receive's capacity
	payload []byte // what a Send or Write carries; what a Read must find in its sink
	imm     uint64
	invSTag uint32
	blocks  []simBlockRef // local blocks to give back at completion

	// churn: it names a region whose registration may change while it is
	// posted (a local protection error or a flush is then possible).
	churn bool
	// bad is the error PostSend or PostRecv must refuse it with (nil: a
	// well-formed WR).
	bad error
	// invalidates is the local region a Local Invalidate or Read with
	// Invalidate invalidates on success; remoteInv the peer's region a Send
	// with Invalidate invalidates.
	invalidates *simRegion
	remoteInv   *simRegion
	// consumer is this WR's index among the side's messages that take a
	// peer receive (1-based; 0: none).
	consumer int
	counted  bool // the batch counted it as taking a peer receive
	sent     bool // its message's last octet was written (the wire monitor)
	epoch    int  // the invalidated region's epoch when it was posted
	// target is the peer's Write zone range it writes (verified once a
	// later message proves placement).
	target    *simRegion
	targetOff int
	verified  bool
	// Atomics: the word and its expected original value.
	atomWord   int
	original   uint64
	expectSink bool // the sink content is known (payload) and checked
	provokes   []wire.TermCode
	lengthRisk bool
	commit     func()
	done       bool
	implicit   bool
	status     Status
	postedAt   int64
}

type simBlockRef struct {
	g       *simRegion
	off, n  int
	isLocal bool
}

// action is one application action of side s.
func (s *simSide) action() {
	w := s.w
	switch r := w.rng.IntN(100); {
	case r < 45:
		s.postSends()
	case r < 70:
		s.postRecvs()
	case r < 90:
		s.poll()
	default:
		s.churnAction()
	}
}

// nextID returns a fresh WR ID (unique per side).
func (s *simSide) nextID(rec *simWR) uint64 {
	rec.id = uint64(len(s.wrs) + 1)
	rec.s = s
	s.wrs = append(s.wrs, rec)
	return rec.id
}

// postSends posts a batch of one to four send WRs.
func (s *simSide) postSends() {
	w := s.w
	k := 1 + w.rng.IntN(4)
	var wrs []SendWR
	var recs []*simWR
	gen := simSendGen{s: s}
	for range k {
		wr, rec := gen.next()
		if rec == nil {
			continue
		}
		wr.ID = s.nextID(rec)
		wrs, recs = append(wrs, wr), append(recs, rec)
	}
	if len(wrs) == 0 {
		return
	}
	state := s.core.State()
	n, err := s.core.PostSend(wrs)
	s.posting("PostSend", recs, wrs, n, err, state)
}

// posting checks what PostSend or PostRecv did with recs (wrs: the send
// WRs, nil for receives): accepted a prefix, refused the next WR with the
// right error, and only in RTS; then the ledger takes the accepted ones
// and the others give their buffers back.
func (s *simSide) posting(what string, recs []*simWR, wrs []SendWR, n int, err error, state State) {
	w := s.w
	if n < 0 || n > len(recs) || (n < len(recs)) != (err != nil) {
		w.failf("side %s: %s of %d WRs returned %d, %v", s.name, what, len(recs), n, err)
	}
	if state != StateRTS && n > 0 {
		w.failf("side %s: %s accepted %d WRs in state %v", s.name, what, n, state)
	}
	for i, rec := range recs[:n] {
		if rec.bad != nil {
			w.failf("side %s: %s accepted %v WR %d, which it must refuse with %q", s.name, what, rec.op, rec.id, rec.bad)
		}
		if wrs != nil {
			s.accept(rec, &wrs[i])
		} else {
			s.accept(rec, nil)
		}
	}
	if err != nil {
		s.refused(recs[n], err, state)
	}
	for _, rec := range recs[n:] {
		rec.giveBack()
	}
}

// refused checks the error a WR was refused with.
func (s *simSide) refused(rec *simWR, err error, state State) {
	w := s.w
	w.ev(s.idx, simEvPostRefused, rec.id, uint64(rec.op))
	switch {
	case state != StateRTS:
		if !errors.Is(err, ErrQPState) && !errors.Is(err, ErrSharedRecv) {
			w.failf("side %s: a WR posted in state %v was refused with %q, want %q", s.name, state, err, ErrQPState)
		}
	case rec.bad != nil && errors.Is(err, rec.bad):
		w.cover.refused++
	case errors.Is(err, ErrSQFull), errors.Is(err, ErrSQNeedsSignaled), errors.Is(err, ErrRQFull):
	case rec.churn && errors.Is(err, ErrRegionInvalid):
	case rec.bad != nil:
		w.failf("side %s: %s WR %d refused with %q, want %q", s.name, rec.op, rec.id, err, rec.bad)
	default:
		w.failf("side %s: well-formed %s WR %d (sgl %v) refused with %q", s.name, rec.op, rec.id, rec.sgl, err)
	}
}

// accept records a WR the Core took.
func (s *simSide) accept(rec *simWR, wr *SendWR) {
	w := s.w
	rec.postedAt = w.now
	if rec.recv {
		rec.seq = len(s.rq)
		s.rq = append(s.rq, rec)
		w.ev(s.idx, simEvPostRecv, rec.id, uint64(rec.n))
	} else {
		rec.seq = len(s.sq)
		s.sq = append(s.sq, rec)
		w.ev(s.idx, simEvPostSend, rec.id, uint64(rec.op)<<8|uint64(rec.flags))
	}
	s.posted++
	if rec.commit != nil {
		rec.commit()
	}
	s.provokes = append(s.provokes, rec.provokes...)
	if rec.lengthRisk {
		s.peer.lengthRisk = true
	}
	if wr != nil && wr.Flags&Inline != 0 && rec.payload != nil {
		// An inline WR's buffers are free at once: the application may
		// scribble on them (only churn sources are writable here).
		for _, b := range rec.blocks {
			if b.g.kind == simKindChurn && b.isLocal {
				buf := b.g.bytes()[b.off : b.off+b.n]
				for i := range buf {
					buf[i] ^= 0xFF
				}
			}
		}
	}
}

// giveBack returns the local blocks of a WR that was not posted.
func (rec *simWR) giveBack() {
	for _, b := range rec.blocks {
		if b.isLocal {
			b.g.local.free(b.g, b.off, b.n)
		}
	}
	rec.blocks = nil
}

// postRecvs posts a batch of one to three receives, to the Core's own
// receive queue or to the shared one.
func (s *simSide) postRecvs() {
	state := s.core.State()
	if s.srq != nil {
		s.postRecvsTo("SRQ Post", s.srq.Post, StateRTS) // a shared queue takes receives whatever the QP does
	} else {
		s.postRecvsTo("PostRecv", s.core.PostRecv, state)
	}
}

// postRecvsTo posts one to three receives with post, as the application
// does in state (where the Core refuses them outside RTS).
func (s *simSide) postRecvsTo(what string, post func([]RecvWR) (int, error), state State) {
	w := s.w
	k := 1 + w.rng.IntN(3)
	var wrs []RecvWR
	var recs []*simWR
	for range k {
		rec := &simWR{recv: true, op: OpRecv}
		var wr RecvWR
		wr.SGL = s.genRecvSGL(rec)
		wr.ID = s.nextID(rec)
		rec.sgl = wr.SGL
		wrs, recs = append(wrs, wr), append(recs, rec)
	}
	n, err := post(wrs)
	s.posting(what, recs, nil, n, err, state)
}

// genRecvSGL draws a receive's scatter list: blocks of the sink (or of a
// churn region), now and then a malformed one.
func (s *simSide) genRecvSGL(rec *simWR) []SGE {
	w := s.w
	c := &w.cfg
	maxSGE := c.maxSGE[s.idx]
	if c.risky && w.rng.IntN(20) == 0 {
		switch w.rng.IntN(3) {
		case 0:
			rec.bad = ErrTooManySGE
			sgl := make([]SGE, maxSGE+1)
			for i := range sgl {
				sgl[i] = SGE{Region: s.mem.sink.r, Off: 0, Len: 0}
			}
			return sgl
		case 1:
			rec.bad = ErrBadSGE
			g := s.mem.sink
			return []SGE{{Region: g.r, Off: uint64(g.n - 4), Len: 16}}
		default:
			rec.bad = ErrAccess
			return []SGE{{Region: s.mem.src.r, Off: 0, Len: 8}}
		}
	}
	k := w.rng.IntN(maxSGE + 1)
	sgl := make([]SGE, 0, k)
	budget := simMsgMax(w) // a receive holds at most the longest message
	for range k {
		n := w.rng.IntN(budget + 1)
		if w.rng.IntN(4) == 0 {
			n = w.rng.IntN(min(16, budget+1))
		}
		budget -= n
		g := s.pickLocal()
		off, ok := g.local.alloc(g, n)
		if !ok {
			continue
		}
		rec.blocks = append(rec.blocks, simBlockRef{g: g, off: off, n: n, isLocal: true})
		if g.kind == simKindChurn {
			rec.churn = true
		}
		g.use()
		sgl = append(sgl, SGE{Region: g.r, Off: uint64(off), Len: uint32(n)})
		rec.n += n
	}
	return sgl
}

// pickLocal returns the region a local buffer comes from: the sink, or in
// churn runs now and then a valid churn region.
func (s *simSide) pickLocal() *simRegion {
	w := s.w
	if w.cfg.churn && w.rng.IntN(4) == 0 {
		if g := s.validChurn(); g != nil {
			return g
		}
	}
	return s.mem.sink
}

// validChurn returns a random churn region that is valid in the model.
func (s *simSide) validChurn() *simRegion {
	var ok []*simRegion
	for _, g := range s.mem.churn {
		if g.state == simRegValid {
			ok = append(ok, g)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	g := ok[s.w.rng.IntN(len(ok))]
	g.use() // used at its new generation: its bytes may change again
	return g
}

// simMsgMax is the largest message the run draws (smaller on narrow pipes,
// so that a run ends in reasonable time).
func simMsgMax(w *simWorld) int {
	switch {
	case min(w.cfg.pipeCap[0], w.cfg.pipeCap[1]) < 64:
		return 100
	case w.cfg.maxSeg < 64:
		return 300
	case w.cfg.large:
		return 12000
	}
	return 2500
}

// poll consumes side s's completions.
func (s *simSide) poll() {
	s.comps = s.core.Poll(s.comps[:0])
	s.ledgerPoll()
}

// ledgerPoll hands the completions in s.comps to the ledger and releases
// their slots.
func (s *simSide) ledgerPoll() {
	for i := range s.comps {
		c := s.comps[i]
		s.complete(&c)
		switch {
		case c.Queue == SendQueue:
			s.core.ReleaseSend(c.Slot)
		case s.srq != nil:
			s.srq.Release(c.Slot)
		default:
			s.core.ReleaseRecv(c.Slot)
		}
	}
	s.comps = s.comps[:0]
}

// churnAction changes a churn region's registration with the
// non-blocking mem calls: register, begin an invalidation, a re-key or a
// deregistration.
func (s *simSide) churnAction() {
	w := s.w
	g := s.mem.churn[w.rng.IntN(len(s.mem.churn))]
	m := &s.mem
	switch g.state {
	case simRegNone:
		m.register(g)
	case simRegValid, simRegInvalid:
		switch w.rng.IntN(3) {
		case 0:
			inv := s.table.BeginDeregister(g.r)
			m.begin(g, inv, "deregistration")
			g.state, g.stag = simRegGone, 0
		case 1:
			if g.state != simRegValid {
				return
			}
			inv, why := s.table.BeginInvalidate(g.r, mem.STag(g.stag))
			if why != mem.InvalidateOK && g.r.Valid() && uint32(g.r.STag()) == g.stag {
				w.failf("side %s: BeginInvalidate of the valid STag %#x of %s: %v", s.name, g.stag, g.name, why)
			}
			m.begin(g, inv, "invalidation")
			g.state, g.stag = simRegInvalid, 0
		default:
			stag, inv, err := s.table.BeginRekey(g.r, g.access)
			if err != nil {
				w.failf("side %s: BeginRekey of %s: %v", s.name, g.name, err)
			}
			m.begin(g, inv, "re-key")
			g.state, g.stag = simRegValid, uint32(stag)
			g.epoch++
			w.ev(s.idx, simEvRekey, uint64(stag), 0)
		}
	}
}

// simSendGen draws the send WRs of one batch. consumers counts the batch's
// messages that take a peer receive so far.
type simSendGen struct {
	s           *simSide
	consumers   int
	atomPending []simAtomPending
}

// next draws one send WR and its record (nil: nothing fits now).
func (g *simSendGen) next() (SendWR, *simWR) {
	s := g.s
	w := s.w
	c := &w.cfg
	if c.risky && w.rng.IntN(25) == 0 {
		return g.malformed()
	}
	rec := &simWR{flags: 0}
	if w.rng.IntN(10) < 7 {
		rec.flags |= Signaled
	}
	if w.rng.IntN(6) == 0 {
		rec.flags |= Fence
	}
	var wr SendWR
	var ok bool
	switch r := w.rng.IntN(100); {
	case r < 30:
		wr, ok = g.send(rec)
	case r < 50:
		wr, ok = g.write(rec)
	case r < 70:
		wr, ok = g.read(rec)
	case r < 82 && c.rfc7306:
		wr, ok = g.atomic(rec)
	case r < 90 && c.rfc7306:
		wr, ok = g.immediate(rec)
	case r < 95 && c.churn:
		wr, ok = g.localInv(rec)
	default:
		wr, ok = g.send(rec)
	}
	if !ok {
		rec.giveBack()
		if rec.counted {
			g.consumers-- // it takes no peer receive after all
		}
		return SendWR{}, nil
	}
	wr.Flags = rec.flags
	rec.op, rec.sgl = wr.Op, wr.SGL
	return wr, rec
}

// source draws the payload of a Send or Write: up to MaxSGE pieces of the
// source region (or of a churn region), and its octets.
func (g *simSendGen) source(rec *simWR, n int) ([]SGE, []byte, bool) {
	s := g.s
	w := s.w
	maxSGE := w.cfg.maxSGE[s.idx]
	k := 1
	if n > 0 && maxSGE > 1 {
		k = 1 + w.rng.IntN(min(maxSGE, n))
	}
	var sgl []SGE
	var payload []byte
	for _, piece := range simSplit(w, n, k) {
		if w.cfg.churn && w.rng.IntN(5) == 0 {
			if cg := s.validChurn(); cg != nil {
				off, ok := cg.local.alloc(cg, piece)
				if ok {
					cg.use()
					rec.blocks = append(rec.blocks, simBlockRef{g: cg, off: off, n: piece, isLocal: true})
					rec.churn = true
					sgl = append(sgl, SGE{Region: cg.r, Off: uint64(off), Len: uint32(piece)})
					payload = append(payload, cg.bytes()[off:off+piece]...)
					continue
				}
			}
		}
		src := s.mem.src
		off := w.rng.IntN(src.n - piece + 1)
		sgl = append(sgl, SGE{Region: src.r, Off: uint64(off), Len: uint32(piece)})
		payload = append(payload, src.bytes()[off:off+piece]...)
	}
	if n <= w.cfg.maxInline[s.idx] && w.rng.IntN(3) == 0 {
		rec.flags |= Inline
	}
	return sgl, payload, true
}

// consumer decides the length of a message that takes the peer's next
// receive, from what the peer has posted: it fits (usually), or (in risky
// runs) it is too long or has no receive at all. n < 0: do not send now.
func (g *simSendGen) consumer(rec *simWR, simWantLen int) int {
	s := g.s
	w := s.w
	k := len(s.consumers) + g.consumers + 1
	peer := s.peer
	if k > len(peer.rq) {
		if !w.cfg.risky || w.rng.IntN(6) != 0 {
			return -1
		}
		// The receive it takes may be posted before it arrives, and be
		// too short then.
		rec.provokes = append(rec.provokes, wire.TermDDPNoBuffer, wire.TermDDPTooLong)
		rec.lengthRisk = true
		g.consumers++
		rec.counted = true
		return simWantLen
	}
	r := peer.rq[k-1]
	n := min(simWantLen, r.n)
	if w.cfg.risky && w.rng.IntN(15) == 0 {
		n = r.n + 1 + w.rng.IntN(64)
		rec.provokes = append(rec.provokes, wire.TermDDPTooLong)
		rec.lengthRisk = true
	}
	g.consumers++
	rec.counted = true
	return n
}

// send draws a Send (any of the four, or a V2 Send with Immediate).
func (g *simSendGen) send(rec *simWR) (SendWR, bool) {
	s := g.s
	w := s.w
	ops := []Op{OpSend, OpSendSE, OpSendInv, OpSendSEInv}
	if w.cfg.v2 {
		ops = append(ops, OpSendImm, OpSendSEImm, OpSendInvImm, OpSendSEInvImm)
	}
	op := ops[w.rng.IntN(len(ops))]
	n := g.consumer(rec, w.rng.IntN(simMsgMax(w)+1))
	if n < 0 {
		return SendWR{}, false
	}
	wr := SendWR{Op: op}
	if op == OpSendInv || op == OpSendSEInv || op == OpSendInvImm || op == OpSendSEInvImm {
		if !g.invTarget(rec, &wr) {
			op = map[Op]Op{OpSendInv: OpSend, OpSendSEInv: OpSendSE, OpSendInvImm: OpSendImm, OpSendSEInvImm: OpSendSEImm}[op]
			wr.Op = op
		}
	}
	if op.sendImm() {
		rec.imm = w.rng.Uint64()
		wr.Imm = rec.imm
	}
	sgl, payload, _ := g.source(rec, n)
	wr.SGL, rec.payload, rec.n = sgl, payload, n
	rec.commit = func() { s.addConsumer(rec) }
	return wr, true
}

// invTarget picks the STag a Send with Invalidate names: a valid churn
// region of the peer (it may be invalid by the time the Send arrives), or
// in risky runs one the peer must refuse.
func (g *simSendGen) invTarget(rec *simWR, wr *SendWR) bool {
	s := g.s
	w := s.w
	if w.cfg.churn {
		if t := s.peer.validChurn(); t != nil {
			wr.InvSTag, rec.invSTag, rec.remoteInv, rec.epoch = t.stag, t.stag, t, t.epoch
			rec.provokes = append(rec.provokes, wire.TermRDMAPOpInvalidate)
			return true
		}
	}
	if w.cfg.risky && w.rng.IntN(3) == 0 {
		if w.rng.IntN(2) == 0 {
			wr.InvSTag = s.peer.mem.src.stag // not remotely invalidatable
			rec.provokes = append(rec.provokes, wire.TermRDMAPProtInvalidate)
		} else {
			wr.InvSTag = s.peer.mem.src.stag ^ 0x5A5A00 // unknown
			rec.provokes = append(rec.provokes, wire.TermRDMAPOpInvalidate)
		}
		rec.invSTag = wr.InvSTag
		return true
	}
	return false
}

// addConsumer counts a posted message that takes a peer receive and
// records what the peer's receive must see.
func (s *simSide) addConsumer(rec *simWR) {
	s.consumers = append(s.consumers, rec)
	rec.consumer = len(s.consumers)
	if t := rec.remoteInv; t != nil {
		t.state, t.stag = simRegInvalid, 0 // the peer no longer hands it out
		t.old = append(t.old, rec.invSTag)
	}
}

// write draws an RDMA Write (or Write with Immediate) aimed at the peer's
// Write zone (checked once placement is proved), at a churn region, or in
// risky runs where the peer must refuse it.
func (g *simSendGen) write(rec *simWR) (SendWR, bool) {
	s := g.s
	w := s.w
	peer := s.peer
	op := OpWrite
	if w.cfg.rfc7306 && w.rng.IntN(4) == 0 {
		op = []Op{OpWriteImm, OpWriteImmSE}[w.rng.IntN(2)]
		if g.consumer(rec, 0) < 0 {
			return SendWR{}, false
		}
		rec.imm = w.rng.Uint64()
	}
	n := w.rng.IntN(simMsgMax(w) + 1)
	wr := SendWR{Op: op, Imm: rec.imm}
	z := peer.mem.wzone
	switch r := w.rng.IntN(20); {
	case r == 0:
		n = 0
		wr.RemoteSTag, wr.RemoteTO = w.rng.Uint32(), w.rng.Uint64() // a zero-length Write is not checked
	case r < 4 && w.cfg.churn:
		t := peer.validChurn()
		if t == nil {
			return SendWR{}, false
		}
		n = min(n, t.zoneHi-t.zoneLo)
		wr.RemoteSTag, wr.RemoteTO = t.stag, t.base+uint64(t.zoneLo+w.rng.IntN(t.zoneHi-t.zoneLo-n+1))
		rec.provokes = append(rec.provokes, wire.TermDDPInvalidSTag)
	case r < 6 && w.cfg.risky:
		n = max(n, 16)
		switch w.rng.IntN(3) {
		case 0:
			wr.RemoteSTag, wr.RemoteTO = z.stag, z.base+uint64(z.n) // wholly past the end: no segment fits
			rec.provokes = append(rec.provokes, wire.TermDDPBaseBounds)
		case 1:
			wr.RemoteSTag, wr.RemoteTO = peer.mem.src.stag, peer.mem.src.base
			rec.provokes = append(rec.provokes, wire.TermDDPInvalidSTag) // no remote write access
		default:
			wr.RemoteSTag, wr.RemoteTO = z.stag^0x5A5A00, z.base
			rec.provokes = append(rec.provokes, wire.TermDDPInvalidSTag)
		}
	default:
		off, ok := z.aim(n)
		if !ok {
			n = 0
			wr.RemoteSTag, wr.RemoteTO = z.stag, z.base
			break
		}
		wr.RemoteSTag, wr.RemoteTO = z.stag, z.base+uint64(off)
		rec.target, rec.targetOff = z, off
	}
	sgl, payload, _ := g.source(rec, n)
	wr.SGL, rec.payload, rec.n = sgl, payload, n
	if op != OpWrite {
		rec.commit = func() { s.addConsumer(rec) }
	}
	return wr, true
}

// read draws an RDMA Read (with Invalidate in churn runs, Read V2 with V2)
// of the peer's source region or atomic words (whose content the sink must
// then hold), of a churn region, or in risky runs of memory the peer must
// refuse.
func (g *simSendGen) read(rec *simWR) (SendWR, bool) {
	s := g.s
	w := s.w
	peer := s.peer
	op := OpRead
	switch r := w.rng.IntN(6); {
	case r == 0 && w.cfg.v2:
		op = OpReadV2
	case r == 1 && w.cfg.churn:
		op = OpReadInv
	}
	n := w.rng.IntN(simMsgMax(w) + 1)
	wr := SendWR{Op: op}
	var expect func() []byte
	switch r := w.rng.IntN(20); {
	case r == 0:
		n = 0
		wr.RemoteSTag, wr.RemoteTO = w.rng.Uint32(), w.rng.Uint64() // a zero-length Read is not checked
		expect = func() []byte { return []byte{} }
	case r < 5 && w.cfg.rfc7306:
		a := peer.mem.atom
		i := w.rng.IntN(simHotWords)
		k := 1 + w.rng.IntN(len(peer.mem.atomModel)-i)
		n = 8 * k
		wr.RemoteSTag, wr.RemoteTO = a.stag, a.base+uint64(8*i)
		expect = func() []byte {
			b := make([]byte, n)
			for j := range k {
				binary.NativeEndian.PutUint64(b[8*j:], peer.mem.atomModel[i+j])
			}
			return b
		}
	case r < 8 && w.cfg.churn:
		t := peer.validChurn()
		if t == nil {
			return SendWR{}, false
		}
		n = min(n, t.n)
		wr.RemoteSTag, wr.RemoteTO = t.stag, t.base+uint64(w.rng.IntN(t.n-n+1))
		rec.provokes = append(rec.provokes, wire.TermRDMAPInvalidSTag)
	case r < 10 && w.cfg.risky:
		n = max(n, 16)
		src := peer.mem.src
		switch w.rng.IntN(3) {
		case 0:
			wr.RemoteSTag, wr.RemoteTO = src.stag, src.base+uint64(src.n-8)
			rec.provokes = append(rec.provokes, wire.TermRDMAPBaseBounds)
		case 1:
			z := peer.mem.wzone
			wr.RemoteSTag, wr.RemoteTO = z.stag, z.base
			rec.provokes = append(rec.provokes, wire.TermRDMAPAccessRights)
		default:
			wr.RemoteSTag, wr.RemoteTO = src.stag^0x5A5A00, src.base
			rec.provokes = append(rec.provokes, wire.TermRDMAPInvalidSTag)
		}
	default:
		src := peer.mem.src
		n = min(n, src.n)
		off := w.rng.IntN(src.n - n + 1)
		wr.RemoteSTag, wr.RemoteTO = src.stag, src.base+uint64(off)
		expect = func() []byte { return bytes.Clone(peer.mem.orig[src.off+off : src.off+off+n]) }
	}
	// The sink: one SGE (Read), up to MaxSGE (Read V2); Read with
	// Invalidate sinks into a churn region it invalidates.
	parts := 1
	if op == OpReadV2 && n > 0 {
		parts = 1 + w.rng.IntN(min(w.cfg.maxSGE[s.idx], n))
	}
	for i, piece := range simSplit(w, n, parts) {
		lg := s.pickLocal()
		if op == OpReadInv {
			if lg = s.validChurn(); lg == nil || i > 0 {
				return SendWR{}, false
			}
			rec.invalidates, rec.invSTag, rec.epoch = lg, lg.stag, lg.epoch
		}
		off, ok := lg.local.alloc(lg, piece)
		if !ok {
			return SendWR{}, false
		}
		lg.use()
		rec.blocks = append(rec.blocks, simBlockRef{g: lg, off: off, n: piece, isLocal: true})
		if lg.kind == simKindChurn {
			rec.churn = true
		}
		wr.SGL = append(wr.SGL, SGE{Region: lg.r, Off: uint64(off), Len: uint32(piece)})
	}
	if n == 0 && w.rng.IntN(2) == 0 && op != OpReadInv {
		rec.giveBack()
		wr.SGL = nil
	}
	rec.n = n
	rec.commit = func() {
		if expect != nil {
			rec.payload, rec.expectSink = expect(), true
		}
		if t := rec.invalidates; t != nil {
			t.state = simRegInvalid
			t.old = append(t.old, t.stag)
			t.stag = 0
		}
	}
	return wr, true
}

// atomic draws a FetchAdd or CmpSwap on one of the peer's atomic words
// (its original value is then known from the model), or in risky runs on
// memory the peer must refuse; the result lands in a sink block or
// nowhere.
func (g *simSendGen) atomic(rec *simWR) (SendWR, bool) {
	s := g.s
	w := s.w
	peer := s.peer
	a := peer.mem.atom
	op := []Op{OpFetchAdd, OpCmpSwap}[w.rng.IntN(2)]
	wr := SendWR{Op: op}
	i := w.rng.IntN(simHotWords) // few words: Reads and atomics meet on them
	wr.RemoteSTag, wr.RemoteTO = a.stag, a.base+uint64(8*i)
	known := true
	if w.cfg.risky && w.rng.IntN(8) == 0 {
		known = false
		switch w.rng.IntN(3) {
		case 0:
			wr.RemoteTO = a.base + uint64(a.n)
			rec.provokes = append(rec.provokes, wire.TermRDMAPBaseBounds)
		case 1:
			wr.RemoteSTag, wr.RemoteTO = peer.mem.src.stag, peer.mem.src.base
			rec.provokes = append(rec.provokes, wire.TermRDMAPAccessRights)
		default:
			wr.RemoteSTag = a.stag ^ 0x5A5A00
			rec.provokes = append(rec.provokes, wire.TermRDMAPInvalidSTag)
		}
	}
	small := func() uint64 {
		if w.rng.IntN(2) == 0 {
			return uint64(w.rng.IntN(5))
		}
		return w.rng.Uint64()
	}
	wr.Data = small()
	if w.rng.IntN(2) == 0 {
		wr.Mask = w.rng.Uint64()
	}
	if op == OpCmpSwap {
		wr.Mask = ^uint64(0)
		if w.rng.IntN(3) == 0 {
			wr.Mask = w.rng.Uint64()
		}
		wr.CompareMask = ^uint64(0)
		if w.rng.IntN(3) == 0 {
			wr.CompareMask = w.rng.Uint64()
		}
	}
	if w.rng.IntN(4) != 0 {
		lg := s.pickLocal()
		n := 8 + 8*w.rng.IntN(2)
		off, ok := lg.local.alloc(lg, n)
		if !ok {
			return SendWR{}, false
		}
		lg.use()
		rec.blocks = append(rec.blocks, simBlockRef{g: lg, off: off, n: n, isLocal: true})
		rec.churn = rec.churn || lg.kind == simKindChurn
		wr.SGL = []SGE{{Region: lg.r, Off: uint64(off), Len: uint32(n)}}
	}
	if op == OpCmpSwap {
		wr.Compare = small()
	}
	rec.atomWord, rec.n = i, 8
	if known {
		v := g.atomValue(i)
		if op == OpCmpSwap && w.rng.IntN(2) == 0 {
			wr.Compare = v // the swap happens (under the compare mask)
		}
		var nv uint64
		if op == OpFetchAdd {
			nv = mem.FetchAddMasked(v, wr.Data, wr.Mask)
		} else {
			nv = mem.CmpSwapMasked(v, wr.Compare, wr.CompareMask, wr.Data, wr.Mask)
		}
		g.atomPending = append(g.atomPending, simAtomPending{i, nv})
		rec.commit = func() {
			rec.original, rec.expectSink = v, true
			peer.mem.atomModel[i] = nv
		}
	}
	return wr, true
}

// atomValue is the value word i of the peer's atomic region will have
// when the batch's next atomic runs.
func (g *simSendGen) atomValue(i int) uint64 {
	for k := len(g.atomPending) - 1; k >= 0; k-- {
		if g.atomPending[k].word == i {
			return g.atomPending[k].v
		}
	}
	return g.s.peer.mem.atomModel[i]
}

type simAtomPending struct {
	word int
	v    uint64
}

// immediate draws an Immediate Data message (RFC 7306).
func (g *simSendGen) immediate(rec *simWR) (SendWR, bool) {
	s := g.s
	w := s.w
	if g.consumer(rec, 0) < 0 {
		return SendWR{}, false
	}
	op := []Op{OpImmediate, OpImmediateSE}[w.rng.IntN(2)]
	rec.imm = w.rng.Uint64()
	rec.commit = func() { s.addConsumer(rec) }
	return SendWR{Op: op, Imm: rec.imm}, true
}

// localInv draws a Local Invalidate of one of this side's churn regions.
func (g *simSendGen) localInv(rec *simWR) (SendWR, bool) {
	s := g.s
	t := s.validChurn()
	if t == nil {
		return SendWR{}, false
	}
	rec.invalidates, rec.churn, rec.invSTag, rec.epoch = t, true, t.stag, t.epoch
	rec.commit = func() {
		t.state = simRegInvalid
		t.old = append(t.old, t.stag)
		t.stag = 0
	}
	return SendWR{Op: OpLocalInv, InvSTag: t.stag}, true
}

// malformed draws a WR PostSend must refuse, and the error it must give.
func (g *simSendGen) malformed() (SendWR, *simWR) {
	s := g.s
	w := s.w
	c := &w.cfg
	src := s.mem.src
	rec := &simWR{flags: Signaled}
	wr := SendWR{Op: OpSend, Flags: Signaled}
	switch w.rng.IntN(9) {
	case 0:
		rec.bad = ErrBadSGE
		wr.SGL = []SGE{{Region: src.r, Off: uint64(src.n - 4), Len: 16}}
	case 1:
		rec.bad = ErrTooManySGE
		for range c.maxSGE[s.idx] + 1 {
			wr.SGL = append(wr.SGL, SGE{Region: src.r, Len: 1})
		}
	case 2:
		rec.bad = ErrBadOp
		wr.Op = []Op{0, OpRecv, OpReadV2 + 1, 200}[w.rng.IntN(4)]
	case 3:
		rec.bad = ErrNotSupportedByPeer
		switch {
		case !c.v2:
			wr.Op = []Op{OpSendImm, OpReadV2}[w.rng.IntN(2)]
		case !c.rfc7306:
			wr.Op = OpFetchAdd
		default:
			rec.bad, wr.Op = ErrBadOp, 0
		}
	case 4:
		if !c.rfc7306 {
			rec.bad, wr.Op = ErrBadOp, 0
			break
		}
		rec.bad = ErrMisaligned
		wr.Op, wr.RemoteSTag, wr.RemoteTO = OpFetchAdd, s.peer.mem.atom.stag, s.peer.mem.atom.base+4
	case 5:
		if c.maxSGE[s.idx] < 2 {
			rec.bad, wr.Op = ErrBadOp, 0
			break
		}
		rec.bad = ErrReadSinkSGE
		sink := s.mem.sink
		wr.Op = OpRead
		wr.SGL = []SGE{{Region: sink.r, Len: 0}, {Region: sink.r, Len: 0}}
	case 6:
		rec.bad = ErrAccess
		wr.Op = OpRead
		wr.SGL = []SGE{{Region: src.r, Len: 8}}
	case 7:
		rec.bad = ErrInlineTooLong
		wr.Flags |= Inline
		wr.SGL = []SGE{{Region: src.r, Len: uint32(c.maxInline[s.idx] + 1)}}
	default:
		if !c.rfc7306 {
			rec.bad, wr.Op = ErrBadOp, 0
			break
		}
		rec.bad = ErrBadSGE
		wr.Op = OpFetchAdd
		wr.RemoteSTag, wr.RemoteTO = s.peer.mem.atom.stag, s.peer.mem.atom.base
		wr.SGL = []SGE{{Region: s.mem.sink.r, Len: 4}}
	}
	rec.op, rec.sgl, rec.flags = wr.Op, wr.SGL, wr.Flags
	return wr, rec
}

// simHotWords is how many atomic words the atomics aim at.
const simHotWords = 8

// simSplit cuts n octets into k random pieces (some possibly empty).
func simSplit(w *simWorld, n, k int) []int {
	pieces := make([]int, k)
	left := n
	for i := range k - 1 {
		pieces[i] = w.rng.IntN(left + 1)
		left -= pieces[i]
	}
	pieces[k-1] = left
	return pieces
}
