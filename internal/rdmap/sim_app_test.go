package rdmap

import (
	"errors"
	"slices"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// The simulated application: what each side posts, and what it expects of
// every WR it posts (the model the ledger checks completions against).

// simWR is one WR the application tried to post, and then one it posted.
type simWR struct {
	s       *simSide
	id      uint64
	recv    bool
	seq     int
	op      rdma.Opcode
	flags   rdma.SendFlags // as posted: the variant (Solicited, Invalidate, WithImmediate) and Signaled, Fence, Inline
	sgl     []rdma.SGE
	segs    []Seg  // sgl's regions as the Core resolved them when it was posted
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
	// atomRead: a Read of atomic words, checked against their history.
	atomRead *simAtomRead
	epoch    int // the invalidated region's epoch when it was posted
	// target is the peer's Write zone range it writes (verified once a
	// later message proves placement).
	target    *simRegion
	targetOff int
	verified  bool
	// Atomics: the word and its expected original value.
	atomWord   int
	original   uint64
	expectSink bool // the sink content is known (payload) and checked
	provokes   []rdma.TermCode
	lengthRisk bool
	commit     func()
	done       bool
	implicit   bool
	status     rdma.Status
	postedAt   int64
}

// simAtomRead is a Read of k atomic words from word on; idx[j] is the
// index in word+j's history of its value when the Read was posted.
type simAtomRead struct {
	word int
	idx  []int
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
func (s *simSide) posting(what string, recs []*simWR, wrs []SendWR, n int, err error, state rdma.QPState) {
	w := s.w
	if n < 0 || n > len(recs) || (n < len(recs)) != (err != nil) {
		w.failf("side %s: %s of %d WRs returned %d, %v", s.name, what, len(recs), n, err)
	}
	if state != rdma.StateRTS && n > 0 {
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
func (s *simSide) refused(rec *simWR, err error, state rdma.QPState) {
	w := s.w
	w.ev(s.idx, simEvPostRefused, rec.id, uint64(rec.op))
	switch {
	case state != rdma.StateRTS:
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
	if wr != nil && wr.Flags&rdma.Inline != 0 && rec.payload != nil {
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
		s.postRecvsTo("SRQ Post", s.srq.Post, rdma.StateRTS) // a shared queue takes receives whatever the QP does
	} else {
		s.postRecvsTo("PostRecv", s.core.PostRecv, state)
	}
}

// postRecvsTo posts one to three receives with post, as the application
// does in state (where the Core refuses them outside RTS).
func (s *simSide) postRecvsTo(what string, post func([]RecvWR) (int, error), state rdma.QPState) {
	w := s.w
	k := 1 + w.rng.IntN(3)
	var wrs []RecvWR
	var recs []*simWR
	for range k {
		rec := &simWR{recv: true, op: rdma.OpRecv}
		var wr RecvWR
		wr.SGL = s.genRecvSGL(rec)
		wr.ID = s.nextID(rec)
		rec.sgl, rec.segs = wr.SGL, s.resolve(wr.SGL)
		wrs, recs = append(wrs, wr), append(recs, rec)
	}
	n, err := post(wrs)
	s.posting(what, recs, nil, n, err, state)
}

// genRecvSGL draws a receive's scatter list: blocks of the sink (or of a
// churn region), now and then a malformed one.
func (s *simSide) genRecvSGL(rec *simWR) []rdma.SGE {
	w := s.w
	c := &w.cfg
	maxSGE := c.maxSGE[s.idx]
	if c.risky && w.rng.IntN(20) == 0 {
		switch w.rng.IntN(3) {
		case 0:
			rec.bad = ErrTooManySGE
			sgl := make([]rdma.SGE, maxSGE+1)
			for i := range sgl {
				sgl[i] = rdma.SGE{STag: stagOf(s.mem.sink.r), Offset: 0, Length: 0}
			}
			return sgl
		case 1:
			rec.bad = ErrBadSGE
			g := s.mem.sink
			return []rdma.SGE{{STag: stagOf(g.r), Offset: uint64(g.n - 4), Length: 16}}
		default:
			rec.bad = ErrAccess
			return []rdma.SGE{{STag: stagOf(s.mem.src.r), Offset: 0, Length: 8}}
		}
	}
	k := w.rng.IntN(maxSGE + 1)
	sgl := make([]rdma.SGE, 0, k)
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
		sgl = append(sgl, rdma.SGE{STag: stagOf(g.r), Offset: uint64(off), Length: uint32(n)})
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
			if slices.Contains(g.old, g.stag) {
				// The 8-bit key came round to one the region had: a
				// peer's stale STag is valid again, its bytes may change.
				g.use()
			}
			w.ev(s.idx, simEvRekey, uint64(stag), 0)
		}
	}
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

// shape is the WR as the Core's predicates see it: its opcode and flags.
func (rec *simWR) shape() *SendWR { return &SendWR{Op: rec.op, Flags: rec.flags} }

// resolve returns the regions sgl names, as the Core resolves them when it
// is posted (the STag's index names the region; the test reads through
// them what a WR placed).
func (s *simSide) resolve(sgl []rdma.SGE) []Seg {
	segs := make([]Seg, len(sgl))
	for i, e := range sgl {
		segs[i] = Seg{Region: s.table.Lookup(mem.STag(e.STag)), Off: e.Offset, Len: e.Length}
	}
	return segs
}
