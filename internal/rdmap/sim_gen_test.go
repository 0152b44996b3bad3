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
		rec.flags |= rdma.Signaled
	}
	if w.rng.IntN(6) == 0 {
		rec.flags |= rdma.Fence
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
	wr.Flags |= rec.flags // the variant's flags and the draws'
	rec.op, rec.flags, rec.sgl, rec.segs = wr.Op, wr.Flags, wr.SGL, s.resolve(wr.SGL)
	return wr, rec
}

// source draws the payload of a Send or Write: up to MaxSGE pieces of the
// source region (or of a churn region), and its octets.
func (g *simSendGen) source(rec *simWR, n int) ([]rdma.SGE, []byte, bool) {
	s := g.s
	w := s.w
	maxSGE := w.cfg.maxSGE[s.idx]
	k := 1
	if n > 0 && maxSGE > 1 {
		k = 1 + w.rng.IntN(min(maxSGE, n))
	}
	var sgl []rdma.SGE
	var payload []byte
	for _, piece := range simSplit(w, n, k) {
		if w.cfg.churn && w.rng.IntN(5) == 0 {
			if cg := s.validChurn(); cg != nil {
				off, ok := cg.local.alloc(cg, piece)
				if ok {
					cg.use()
					rec.blocks = append(rec.blocks, simBlockRef{g: cg, off: off, n: piece, isLocal: true})
					rec.churn = true
					sgl = append(sgl, rdma.SGE{STag: stagOf(cg.r), Offset: uint64(off), Length: uint32(piece)})
					payload = append(payload, cg.bytes()[off:off+piece]...)
					continue
				}
			}
		}
		src := s.mem.src
		off := w.rng.IntN(src.n - piece + 1)
		sgl = append(sgl, rdma.SGE{STag: stagOf(src.r), Offset: uint64(off), Length: uint32(piece)})
		payload = append(payload, src.bytes()[off:off+piece]...)
	}
	if n <= w.cfg.maxInline[s.idx] && w.rng.IntN(3) == 0 {
		rec.flags |= rdma.Inline
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
	variants := []rdma.SendFlags{0, rdma.Solicited, rdma.Invalidate, rdma.Solicited | rdma.Invalidate}
	if w.cfg.v2 {
		variants = append(variants, rdma.WithImmediate, rdma.Solicited|rdma.WithImmediate,
			rdma.Invalidate|rdma.WithImmediate, rdma.Solicited|rdma.Invalidate|rdma.WithImmediate)
	}
	flags := variants[w.rng.IntN(len(variants))]
	n := g.consumer(rec, w.rng.IntN(simMsgMax(w)+1))
	if n < 0 {
		return SendWR{}, false
	}
	wr := SendWR{Op: rdma.OpSend, Flags: flags}
	if invalidates(&wr) {
		if !g.invTarget(rec, &wr) {
			wr.Flags &^= rdma.Invalidate // the same Send without Invalidate
		}
	}
	if sendImm(&wr) {
		rec.imm = w.rng.Uint64()
		wr.Immediate = rec.imm
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
			wr.InvalidateSTag, rec.invSTag, rec.remoteInv, rec.epoch = t.stag, t.stag, t, t.epoch
			rec.provokes = append(rec.provokes, rdma.TermRDMAPOpInvalidate)
			return true
		}
	}
	if w.cfg.risky && w.rng.IntN(3) == 0 {
		if w.rng.IntN(2) == 0 {
			wr.InvalidateSTag = s.peer.mem.src.stag // not remotely invalidatable
			rec.provokes = append(rec.provokes, rdma.TermRDMAPProtInvalidate)
		} else {
			wr.InvalidateSTag = s.peer.mem.src.stag ^ 0x5A5A00 // unknown
			rec.provokes = append(rec.provokes, rdma.TermRDMAPOpInvalidate)
		}
		rec.invSTag = wr.InvalidateSTag
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
	var flags rdma.SendFlags
	if w.cfg.rfc7306 && w.rng.IntN(4) == 0 {
		flags = []rdma.SendFlags{rdma.WithImmediate, rdma.WithImmediate | rdma.Solicited}[w.rng.IntN(2)]
		if g.consumer(rec, 0) < 0 {
			return SendWR{}, false
		}
		rec.imm = w.rng.Uint64()
	}
	n := w.rng.IntN(simMsgMax(w) + 1)
	wr := SendWR{Op: rdma.OpWrite, Flags: flags, Immediate: rec.imm}
	z := peer.mem.wzone
	atomWrite := -1
	switch r := w.rng.IntN(20); {
	case r == 0:
		n = 0
		wr.Remote.STag, wr.Remote.TO = w.rng.Uint32(), w.rng.Uint64() // a zero-length Write is not checked
	case r < 4 && w.cfg.churn:
		t := peer.validChurn()
		if t == nil {
			return SendWR{}, false
		}
		n = min(n, t.zoneHi-t.zoneLo)
		wr.Remote.STag, wr.Remote.TO = t.stag, t.base+uint64(t.zoneLo+w.rng.IntN(t.zoneHi-t.zoneLo-n+1))
		rec.provokes = append(rec.provokes, rdma.TermDDPInvalidSTag)
	case r < 8 && w.cfg.rfc7306:
		// Whole atomic words, fenced: a Write may overtake an earlier
		// atomic that waits behind a Read Response (RFC 7306 §7, "No
		// Placement Guarantee between RDMA Write Payload and Atomic
		// Request"); Fence gives the posting order (docs/extensions.md),
		// which the model follows. Later atomics see the Write; a Read
		// may see it early.
		rec.flags |= rdma.Fence
		a := peer.mem.atom
		i := w.rng.IntN(simHotWords)
		k := 1 + w.rng.IntN(min(4, len(peer.mem.atomModel)-i))
		n = 8 * k
		wr.Remote.STag, wr.Remote.TO = a.stag, a.base+uint64(8*i)
		atomWrite = i
	case r < 6 && w.cfg.risky:
		n = max(n, 16)
		switch w.rng.IntN(3) {
		case 0:
			wr.Remote.STag, wr.Remote.TO = z.stag, z.base+uint64(z.n) // wholly past the end: no segment fits
			rec.provokes = append(rec.provokes, rdma.TermDDPBaseBounds)
		case 1:
			wr.Remote.STag, wr.Remote.TO = peer.mem.src.stag, peer.mem.src.base
			rec.provokes = append(rec.provokes, rdma.TermDDPInvalidSTag) // no remote write access
		default:
			wr.Remote.STag, wr.Remote.TO = z.stag^0x5A5A00, z.base
			rec.provokes = append(rec.provokes, rdma.TermDDPInvalidSTag)
		}
	default:
		off, ok := z.aim(n)
		if !ok {
			n = 0
			wr.Remote.STag, wr.Remote.TO = z.stag, z.base
			break
		}
		wr.Remote.STag, wr.Remote.TO = z.stag, z.base+uint64(off)
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
		if flags&rdma.WithImmediate != 0 {
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
	op := rdma.OpRead
	var flags rdma.SendFlags
	switch r := w.rng.IntN(6); {
	case r == 0 && w.cfg.v2:
		op = rdma.OpReadV2
	case r == 1 && w.cfg.churn:
		flags = rdma.Invalidate // Read with Local Invalidate
	}
	readInv := flags&rdma.Invalidate != 0
	n := w.rng.IntN(simMsgMax(w) + 1)
	wr := SendWR{Op: op, Flags: flags}
	var expect func() []byte
	switch r := w.rng.IntN(20); {
	case r == 0:
		n = 0
		wr.Remote.STag, wr.Remote.TO = w.rng.Uint32(), w.rng.Uint64() // a zero-length Read is not checked
		expect = func() []byte { return []byte{} }
	case r < 5 && w.cfg.rfc7306:
		a := peer.mem.atom
		i := w.rng.IntN(simHotWords)
		k := 1 + w.rng.IntN(len(peer.mem.atomModel)-i)
		n = 8 * k
		wr.Remote.STag, wr.Remote.TO = a.stag, a.base+uint64(8*i)
		rec.atomRead = &simAtomRead{word: i, idx: make([]int, k)}
	case r < 8 && w.cfg.churn:
		t := peer.validChurn()
		if t == nil {
			return SendWR{}, false
		}
		n = min(n, t.n)
		wr.Remote.STag, wr.Remote.TO = t.stag, t.base+uint64(w.rng.IntN(t.n-n+1))
		rec.provokes = append(rec.provokes, rdma.TermRDMAPInvalidSTag)
	case r < 10 && w.cfg.risky:
		n = max(n, 16)
		src := peer.mem.src
		switch w.rng.IntN(3) {
		case 0:
			wr.Remote.STag, wr.Remote.TO = src.stag, src.base+uint64(src.n-8)
			rec.provokes = append(rec.provokes, rdma.TermRDMAPBaseBounds)
		case 1:
			z := peer.mem.wzone
			wr.Remote.STag, wr.Remote.TO = z.stag, z.base
			rec.provokes = append(rec.provokes, rdma.TermRDMAPAccessRights)
		default:
			wr.Remote.STag, wr.Remote.TO = src.stag^0x5A5A00, src.base
			rec.provokes = append(rec.provokes, rdma.TermRDMAPInvalidSTag)
		}
	default:
		src := peer.mem.src
		n = min(n, src.n)
		off := w.rng.IntN(src.n - n + 1)
		wr.Remote.STag, wr.Remote.TO = src.stag, src.base+uint64(off)
		expect = func() []byte { return bytes.Clone(peer.mem.orig[src.off+off : src.off+off+n]) }
	}
	// The sink: one SGE (Read), up to MaxSGE (Read V2); Read with
	// Invalidate sinks into a churn region it invalidates.
	parts := 1
	if op == rdma.OpReadV2 && n > 0 {
		parts = 1 + w.rng.IntN(min(w.cfg.maxSGE[s.idx], n))
	}
	for i, piece := range simSplit(w, n, parts) {
		lg := s.pickLocal()
		if readInv {
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
		wr.SGL = append(wr.SGL, rdma.SGE{STag: stagOf(lg.r), Offset: uint64(off), Length: uint32(piece)})
	}
	if n == 0 && w.rng.IntN(2) == 0 && !readInv {
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
	op := []rdma.Opcode{rdma.OpFetchAdd, rdma.OpCompareSwap}[w.rng.IntN(2)]
	wr := SendWR{Op: op}
	i := w.rng.IntN(simHotWords) // few words: Reads and atomics meet on them
	wr.Remote.STag, wr.Remote.TO = a.stag, a.base+uint64(8*i)
	known := true
	if w.cfg.risky && w.rng.IntN(8) == 0 {
		known = false
		switch w.rng.IntN(3) {
		case 0:
			wr.Remote.TO = a.base + uint64(a.n)
			rec.provokes = append(rec.provokes, rdma.TermRDMAPBaseBounds)
		case 1:
			wr.Remote.STag, wr.Remote.TO = peer.mem.src.stag, peer.mem.src.base
			rec.provokes = append(rec.provokes, rdma.TermRDMAPAccessRights)
		default:
			wr.Remote.STag = a.stag ^ 0x5A5A00
			rec.provokes = append(rec.provokes, rdma.TermRDMAPInvalidSTag)
		}
	}
	small := func() uint64 {
		if w.rng.IntN(2) == 0 {
			return uint64(w.rng.IntN(5))
		}
		return w.rng.Uint64()
	}
	// data and mask: the FetchAdd's Add and AddMask, the CmpSwap's Swap
	// and SwapMask (drawn alike for both, as before the operands had
	// names of their own).
	data, mask := small(), uint64(0)
	if w.rng.IntN(2) == 0 {
		mask = w.rng.Uint64()
	}
	if op == rdma.OpCompareSwap {
		mask = ^uint64(0)
		if w.rng.IntN(3) == 0 {
			mask = w.rng.Uint64()
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
		wr.SGL = []rdma.SGE{{STag: stagOf(lg.r), Offset: uint64(off), Length: uint32(n)}}
	}
	if op == rdma.OpCompareSwap {
		wr.Swap, wr.SwapMask = data, mask
		wr.Compare = small()
	} else {
		wr.Add, wr.AddMask = data, mask
	}
	rec.atomWord, rec.n = i, 8
	if known {
		v := g.atomValue(i)
		if op == rdma.OpCompareSwap && w.rng.IntN(2) == 0 {
			wr.Compare = v // the swap happens (under the compare mask)
		}
		var nv uint64
		if op == rdma.OpFetchAdd {
			nv = mem.FetchAddMasked(v, wr.Add, wr.AddMask)
		} else {
			nv = mem.CmpSwapMasked(v, wr.Compare, wr.CompareMask, wr.Swap, wr.SwapMask)
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
	flags := []rdma.SendFlags{0, rdma.Solicited}[w.rng.IntN(2)]
	rec.imm = w.rng.Uint64()
	rec.commit = func() { s.addConsumer(rec) }
	return SendWR{Op: rdma.OpImmediate, Flags: flags, Immediate: rec.imm}, true
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
	return SendWR{Op: rdma.OpLocalInvalidate, InvalidateSTag: t.stag}, true
}

// malformed draws a WR PostSend must refuse, and the error it must give.
func (g *simSendGen) malformed() (SendWR, *simWR) {
	s := g.s
	w := s.w
	c := &w.cfg
	src := s.mem.src
	rec := &simWR{flags: rdma.Signaled}
	wr := SendWR{Op: rdma.OpSend, Flags: rdma.Signaled}
	switch w.rng.IntN(10) {
	case 9:
		// A local buffer of another protection domain (RFC 5040 §6.4;
		// review 1, finding 5).
		rec.bad = ErrPD
		o := s.mem.otherPD
		wr.SGL = []rdma.SGE{{STag: stagOf(o.r), Offset: 0, Length: 8}}
	case 0:
		rec.bad = ErrBadSGE
		wr.SGL = []rdma.SGE{{STag: stagOf(src.r), Offset: uint64(src.n - 4), Length: 16}}
	case 1:
		rec.bad = ErrTooManySGE
		for range c.maxSGE[s.idx] + 1 {
			wr.SGL = append(wr.SGL, rdma.SGE{STag: stagOf(src.r), Length: 1})
		}
	case 2:
		rec.bad = ErrBadOp
		wr.Op = []rdma.Opcode{0, rdma.OpRecv, rdma.OpBindWindow + 1, 200}[w.rng.IntN(4)]
	case 3:
		rec.bad = ErrNotSupportedByPeer
		switch {
		case !c.v2:
			if w.rng.IntN(2) == 0 {
				wr.Flags |= rdma.WithImmediate // Send with Immediate
			} else {
				wr.Op = rdma.OpReadV2
			}
		case !c.rfc7306:
			wr.Op = rdma.OpFetchAdd
		default:
			rec.bad, wr.Op = ErrBadOp, 0
		}
	case 4:
		if !c.rfc7306 {
			rec.bad, wr.Op = ErrBadOp, 0
			break
		}
		rec.bad = ErrMisaligned
		wr.Op, wr.Remote.STag, wr.Remote.TO = rdma.OpFetchAdd, s.peer.mem.atom.stag, s.peer.mem.atom.base+4
	case 5:
		if c.maxSGE[s.idx] < 2 {
			rec.bad, wr.Op = ErrBadOp, 0
			break
		}
		rec.bad = ErrReadSinkSGE
		sink := s.mem.sink
		wr.Op = rdma.OpRead
		wr.SGL = []rdma.SGE{{STag: stagOf(sink.r), Length: 0}, {STag: stagOf(sink.r), Length: 0}}
	case 6:
		rec.bad = ErrAccess
		wr.Op = rdma.OpRead
		wr.SGL = []rdma.SGE{{STag: stagOf(src.r), Length: 8}}
	case 7:
		rec.bad = ErrInlineTooLong
		wr.Flags |= rdma.Inline
		wr.SGL = []rdma.SGE{{STag: stagOf(src.r), Length: uint32(c.maxInline[s.idx] + 1)}}
	default:
		if !c.rfc7306 {
			rec.bad, wr.Op = ErrBadOp, 0
			break
		}
		rec.bad = ErrBadSGE
		wr.Op = rdma.OpFetchAdd
		wr.Remote.STag, wr.Remote.TO = s.peer.mem.atom.stag, s.peer.mem.atom.base
		wr.SGL = []rdma.SGE{{STag: stagOf(s.mem.sink.r), Length: 4}}
	}
	rec.op, rec.sgl, rec.flags, rec.segs = wr.Op, wr.SGL, wr.Flags, s.resolve(wr.SGL)
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
