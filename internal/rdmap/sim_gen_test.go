package rdmap

import (
	"bytes"
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// The send WRs the simulated application draws: every operation, aimed
// at memory whose content the model knows (so a success can be checked
// octet by octet), at churn regions, or in risky runs where the peer must
// refuse it (each such WR records the Terminate codes it may provoke).

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
		rec.provokes = append(rec.provokes, rdma.TermDDPNoBuffer, rdma.TermDDPTooLong)
		rec.lengthRisk = true
		g.consumers++
		rec.counted = true
		return simWantLen
	}
	r := peer.rq[k-1]
	n := min(simWantLen, r.n)
	if w.cfg.risky && w.rng.IntN(15) == 0 {
		n = r.n + 1 + w.rng.IntN(64)
		rec.provokes = append(rec.provokes, rdma.TermDDPTooLong)
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
			rec.provokes = append(rec.provokes, rdma.TermRDMAPOpInvalidate)
			return true
		}
	}
	if w.cfg.risky && w.rng.IntN(3) == 0 {
		if w.rng.IntN(2) == 0 {
			wr.InvSTag = s.peer.mem.src.stag // not remotely invalidatable
			rec.provokes = append(rec.provokes, rdma.TermRDMAPProtInvalidate)
		} else {
			wr.InvSTag = s.peer.mem.src.stag ^ 0x5A5A00 // unknown
			rec.provokes = append(rec.provokes, rdma.TermRDMAPOpInvalidate)
		}
		rec.invSTag = wr.InvSTag
		return true
	}
	return false
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
	atomWrite := -1
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
		rec.provokes = append(rec.provokes, rdma.TermDDPInvalidSTag)
	case r < 8 && w.cfg.rfc7306:
		// Whole atomic words, fenced: a Write may overtake an earlier
		// atomic that waits behind a Read Response (RFC 7306 §7, "No
		// Placement Guarantee between RDMA Write Payload and Atomic
		// Request"); Fence gives the posting order (docs/extensions.md),
		// which the model follows. Later atomics see the Write; a Read
		// may see it early.
		rec.flags |= Fence
		a := peer.mem.atom
		i := w.rng.IntN(simHotWords)
		k := 1 + w.rng.IntN(min(4, len(peer.mem.atomModel)-i))
		n = 8 * k
		wr.RemoteSTag, wr.RemoteTO = a.stag, a.base+uint64(8*i)
		atomWrite = i
	case r < 6 && w.cfg.risky:
		n = max(n, 16)
		switch w.rng.IntN(3) {
		case 0:
			wr.RemoteSTag, wr.RemoteTO = z.stag, z.base+uint64(z.n) // wholly past the end: no segment fits
			rec.provokes = append(rec.provokes, rdma.TermDDPBaseBounds)
		case 1:
			wr.RemoteSTag, wr.RemoteTO = peer.mem.src.stag, peer.mem.src.base
			rec.provokes = append(rec.provokes, rdma.TermDDPInvalidSTag) // no remote write access
		default:
			wr.RemoteSTag, wr.RemoteTO = z.stag^0x5A5A00, z.base
			rec.provokes = append(rec.provokes, rdma.TermDDPInvalidSTag)
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
	if atomWrite >= 0 {
		for j := range n / 8 {
			g.atomPending = append(g.atomPending, simAtomPending{atomWrite + j, binary.NativeEndian.Uint64(payload[8*j:])})
		}
	}
	rec.commit = func() {
		if op != OpWrite {
			s.addConsumer(rec)
		}
		for j := range n / 8 {
			if atomWrite >= 0 {
				peer.mem.atomSet(atomWrite+j, binary.NativeEndian.Uint64(payload[8*j:]), false)
			}
		}
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
		rec.atomRead = &simAtomRead{word: i, idx: make([]int, k)}
	case r < 8 && w.cfg.churn:
		t := peer.validChurn()
		if t == nil {
			return SendWR{}, false
		}
		n = min(n, t.n)
		wr.RemoteSTag, wr.RemoteTO = t.stag, t.base+uint64(w.rng.IntN(t.n-n+1))
		rec.provokes = append(rec.provokes, rdma.TermRDMAPInvalidSTag)
	case r < 10 && w.cfg.risky:
		n = max(n, 16)
		src := peer.mem.src
		switch w.rng.IntN(3) {
		case 0:
			wr.RemoteSTag, wr.RemoteTO = src.stag, src.base+uint64(src.n-8)
			rec.provokes = append(rec.provokes, rdma.TermRDMAPBaseBounds)
		case 1:
			z := peer.mem.wzone
			wr.RemoteSTag, wr.RemoteTO = z.stag, z.base
			rec.provokes = append(rec.provokes, rdma.TermRDMAPAccessRights)
		default:
			wr.RemoteSTag, wr.RemoteTO = src.stag^0x5A5A00, src.base
			rec.provokes = append(rec.provokes, rdma.TermRDMAPInvalidSTag)
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
		if ar := rec.atomRead; ar != nil {
			for j := range ar.idx {
				ar.idx[j] = len(peer.mem.atomHist[ar.word+j]) - 1
			}
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
			rec.provokes = append(rec.provokes, rdma.TermRDMAPBaseBounds)
		case 1:
			wr.RemoteSTag, wr.RemoteTO = peer.mem.src.stag, peer.mem.src.base
			rec.provokes = append(rec.provokes, rdma.TermRDMAPAccessRights)
		default:
			wr.RemoteSTag = a.stag ^ 0x5A5A00
			rec.provokes = append(rec.provokes, rdma.TermRDMAPInvalidSTag)
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
			peer.mem.atomSet(i, nv, true)
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
	switch w.rng.IntN(10) {
	case 9:
		// A local buffer of another protection domain (RFC 5040 §6.4;
		// review 1, finding 5).
		rec.bad = ErrPD
		o := s.mem.otherPD
		wr.SGL = []SGE{{Region: o.r, Off: 0, Len: 8}}
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
