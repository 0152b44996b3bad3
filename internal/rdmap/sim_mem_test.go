package rdmap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/goiwarp/iwarp/internal/mem"
)

// A side's memory: one backing buffer holding every region the side
// registers, with canary gaps between them. orig is the backing's first
// content; shadow is what the application expects in memory no work
// request owns (free blocks of the local buffers, the parts of the Write
// zone no Write aimed at yet). Regions are never re-used for another
// registration, so after a deregistration drained its bytes are frozen for
// good.

const (
	simCanary = 16 // octets of canary before, between and after regions
	simBlock  = 32 // the local allocator's block
	simChurn  = 6  // churn slots per side
)

// simKind is what a region is for.
type simKind uint8

const (
	simKindSrc     simKind = iota // send sources, the peer's Read sources: never changes
	simKindSink                   // receives, Read sinks, atomic results (blocks owned by one WR)
	simKindWzone                  // the peer's Write targets (each range aimed at once)
	simKindAtom                   // the peer's atomic targets (and Read sources)
	simKindChurn                  // registered, invalidated, re-keyed, deregistered during the run
	simKindConform                // the regions a hostile input names (conform's advertisement)
)

// simRegState is a region's registration as the application sees it.
type simRegState uint8

const (
	simRegNone    simRegState = iota // not registered (yet)
	simRegValid                      // valid under stag
	simRegInvalid                    // registered, STag invalidated (or about to be)
	simRegGone                       // deregistered
)

// simRegion is one region of a side's memory.
type simRegion struct {
	m      *simMemory
	name   string
	kind   simKind
	off, n int // in the backing
	base   uint64
	access mem.Access
	pd     uint32

	r     *mem.Region
	state simRegState
	stag  uint32   // the STag the application hands out (valid in the model)
	old   []uint32 // STags it had before (invalid now)
	// frozen: the bytes at the end of the last invalidation's drain; no
	// byte may change while it is set (cleared when the region is used
	// again at a new generation).
	frozen []byte
	what   string // what froze it

	local          *simAlloc // blocks for this side's own WRs (sink; churn: lower half)
	zoneLo, zoneHi int       // the peer's Write zone (wzone; churn: upper half)
	wnext          int       // next fresh octet of the Write zone
	epoch          int       // counts its re-keys: an invalidation posted before one no longer applies
	usedAt         int64     // the step the application last used it
}

// simMemory is one side's registered memory.
type simMemory struct {
	s       *simSide
	backing []byte
	orig    []byte
	shadow  []byte
	regions []*simRegion
	src     *simRegion
	sink    *simRegion
	wzone   *simRegion
	atom    *simRegion
	churn   []*simRegion
	conform [simNumSlots]*simRegion
	otherPD *simRegion // registered in another protection domain
	lo, hi  uintptr    // the backing's addresses

	// atomModel is the value each word of atom has once the peer's
	// atomics (and Writes) posted so far have run, in posting order
	// (sim_gen_test.go); atomHist every value each word took, in order.
	atomModel []uint64
	atomHist  [][]simAtomVal

	pending []*simInval // invalidations begun and not drained
}

// simInval is an invalidation the application began (mem.Begin*).
type simInval struct {
	reg      *simRegion
	inv      *mem.Invalidation
	what     string
	at       int64
	revokeAt int64
	revoked  bool
}

func (m *simMemory) init(s *simSide) {
	m.s = s
	w := s.w
	type spec struct {
		name   string
		kind   simKind
		n      int
		access mem.Access
	}
	k, atom := 1, 64
	if w.cfg.large {
		k, atom = 4, 8192 // messages and Reads beyond the Core's copyMax: referenced under leases
	}
	specs := []spec{
		{"src", simKindSrc, 4096 * k, mem.AccessRemoteRead},
		{"sink", simKindSink, 8192 * k, mem.AccessLocalWrite},
		{"wzone", simKindWzone, 8192 * k, mem.AccessLocalWrite | mem.AccessRemoteWrite},
		{"atom", simKindAtom, atom, mem.AccessRemoteAtomic | mem.AccessRemoteRead | mem.AccessRemoteWrite},
	}
	for i := range simChurn {
		specs = append(specs, spec{fmt.Sprintf("churn%d", i), simKindChurn, 1024,
			mem.AccessLocalWrite | mem.AccessRemoteRead | mem.AccessRemoteWrite | mem.AccessRemoteInvalidate})
	}
	specs = append(specs, spec{"foreign-PD", simKindConform, 64, mem.AccessLocalWrite | mem.AccessRemoteWrite})
	if w.cfg.hostile != nil && w.cfg.victim == s.idx {
		for i, sp := range simConformSpecs {
			if i == simSlotMain && w.cfg.hostile.name == simIRDCase {
				sp.n = 1 << 20 // more than the Core queues at once (its txBudget): the first Response is still being sent
			}
			specs = append(specs, spec{simSlotNames[i], simKindConform, sp.n, sp.access})
		}
	}
	size := simCanary
	for _, sp := range specs {
		size += sp.n + simCanary
	}
	m.backing = make([]byte, size)
	for i := range m.backing {
		m.backing[i] = byte(w.rng.Uint32())
	}
	m.orig = bytes.Clone(m.backing)
	m.shadow = bytes.Clone(m.backing)
	m.lo = simAddr(m.backing)
	m.hi = m.lo + uintptr(len(m.backing))
	off, ci := simCanary, 0
	for _, sp := range specs {
		g := &simRegion{m: m, name: sp.name, kind: sp.kind, off: off, n: sp.n, access: sp.access, pd: s.pd,
			base: uint64(w.rng.Uint32()) << 3}
		off += sp.n + simCanary
		switch sp.kind {
		case simKindSrc:
			m.src = g
		case simKindSink:
			m.sink = g
			g.local = newSimAlloc(0, g.n)
		case simKindWzone:
			m.wzone = g
			g.zoneLo, g.zoneHi = 0, g.n
		case simKindAtom:
			m.atom = g
		case simKindChurn:
			m.churn = append(m.churn, g)
			g.local = newSimAlloc(0, g.n/2)
			g.zoneLo, g.zoneHi = g.n/2, g.n
		case simKindConform:
			if sp.name == "foreign-PD" {
				m.otherPD = g
				g.pd = s.pd + 100
				break
			}
			m.conform[ci] = g
			ci++
		}
		m.regions = append(m.regions, g)
	}
	m.wnextInit()
	for _, g := range m.regions {
		if g.kind != simKindConform && (g.kind != simKindChurn || w.rng.IntN(2) == 0) {
			m.register(g)
		}
	}
	m.register(m.otherPD)
	m.atomModel = make([]uint64, m.atom.n/8)
	m.atomHist = make([][]simAtomVal, m.atom.n/8)
	for i := range m.atomModel {
		m.atomModel[i] = binary.NativeEndian.Uint64(m.backing[m.atom.off+8*i:])
		m.atomHist[i] = []simAtomVal{{v: m.atomModel[i]}}
	}
}

func (m *simMemory) wnextInit() {
	for _, g := range m.regions {
		g.wnext = g.zoneLo
	}
}

// simAtomVal is one value an atomic word took, and whether an atomic (not
// a Write) gave it.
type simAtomVal struct {
	v      uint64
	atomic bool
}

// atomSet records the next value of atomic word i.
func (m *simMemory) atomSet(i int, v uint64, atomic bool) {
	m.atomModel[i] = v
	m.atomHist[i] = append(m.atomHist[i], simAtomVal{v: v, atomic: atomic})
}

// atomReadOK reports whether v may be what a Read posted when word i had
// its idx-th value returns: octet by octet, that value or a later one a
// Write gave (a Read Response may reflect later Writes, even in part:
// docs/semantics.md rule 2), never one a later atomic gave (RFC 7306 §7:
// the Atomic Response is not generated before the earlier Read Response).
func (m *simMemory) atomReadOK(i, idx int, v uint64) bool {
	h := m.atomHist[i]
	for b := 0; b < 64; b += 8 {
		ok := false
		for j := idx; j < len(h) && !ok && (j == idx || !h[j].atomic); j++ {
			ok = byte(h[j].v>>b) == byte(v>>b)
		}
		if !ok {
			return false
		}
	}
	return true
}

// bytes returns the region's buffer.
func (g *simRegion) bytes() []byte { return g.m.backing[g.off : g.off+g.n : g.off+g.n] }

// register registers g (again never: a slot is registered once).
func (m *simMemory) register(g *simRegion) {
	s := m.s
	pd := g.pd
	r, err := s.table.Register(pd, g.bytes(), g.access, g.base)
	if err != nil {
		s.w.failf("side %s: register %s: %v", s.name, g.name, err)
	}
	g.r, g.state, g.stag = r, simRegValid, uint32(r.STag())
	s.w.ev(s.idx, simEvRegister, uint64(g.stag), uint64(g.kind))
}

// begin records an invalidation the application began.
func (m *simMemory) begin(g *simRegion, inv *mem.Invalidation, what string) {
	s := m.s
	if g.stag != 0 {
		g.old = append(g.old, g.stag)
	}
	s.w.ev(s.idx, simEvBegin, uint64(g.stag), uint64(len(what)))
	p := &simInval{reg: g, inv: inv, what: what, at: s.w.now, revokeAt: s.w.now + 1 + int64(s.w.rng.IntN(int(s.w.cfg.opTimeout)))}
	m.pending = append(m.pending, p)
}

// freeze records the bytes of g at the end of an invalidation's drain.
func (g *simRegion) freeze(what string) {
	w := g.m.s.w
	if w.cover.frozen == nil {
		w.cover.frozen = map[string]int{}
	}
	w.cover.frozen[what]++
	g.frozen = bytes.Clone(g.bytes())
	g.what = what
	g.m.s.w.ev(g.m.s.idx, simEvDrained, uint64(g.stag), 0)
}

// use ends the frozen period of g: the application uses it again at its
// current generation.
func (g *simRegion) use() {
	g.frozen = nil
	g.usedAt = g.m.s.w.now
}

// freezeAfter freezes g once the invalidation p drained, unless g was
// re-keyed and used at its new generation since p began: its bytes may
// change again (until a later invalidation of that generation, which
// freezes it in turn).
func (g *simRegion) freezeAfter(p *simInval) {
	if g.usedAt >= p.at {
		return
	}
	g.freeze(p.what)
}

// watchInvalidations freezes the regions whose invalidation drained and
// revokes the leases of those that waited too long, as Deregister does when
// its context ends: the holders must let go at once (checked when the
// holder has been driven once).
func (s *simSide) watchInvalidations() {
	m := &s.mem
	keep := m.pending[:0]
	for _, p := range m.pending {
		switch {
		case p.inv.Drained():
			p.reg.freezeAfter(p)
			continue
		case p.revoked:
			s.core.Poll(s.comps[:0]) // the shell's Wake drives the Core
			s.ledgerPoll()
			if !p.inv.Drained() {
				s.w.failf("side %s: the %s of %s has not drained after Revoke and a Poll (leases left: %v): the Core does not let revoked leases go",
					s.name, p.what, p.reg.name, p.inv.Leases())
			}
			p.reg.freezeAfter(p)
			continue
		case s.w.now >= p.revokeAt:
			n := p.inv.Revoke()
			p.revoked = true
			if n > 0 {
				s.w.cover.revoked++
			}
			s.w.ev(s.idx, simEvRevoke, uint64(p.reg.stag), uint64(n))
		}
		keep = append(keep, p)
	}
	m.pending = keep
}

func (s *simSide) pendingInvalidations() bool { return len(s.mem.pending) > 0 }

// simAddr is the address of b's first octet.
func simAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// locate maps a slice to the region (or canary gap) it falls in: ok is
// false when it does not touch the backing at all; g is nil when it touches
// a canary or spans regions.
func (m *simMemory) locate(b []byte) (g *simRegion, off int, ok bool) {
	lo := simAddr(b)
	hi := lo + uintptr(len(b))
	if len(b) == 0 || hi <= m.lo || lo >= m.hi {
		return nil, 0, false
	}
	if lo < m.lo || hi > m.hi {
		return nil, 0, true
	}
	o, e := int(lo-m.lo), int(hi-m.lo)
	for _, r := range m.regions {
		if o >= r.off && e <= r.off+r.n {
			return r, o - r.off, true
		}
	}
	return nil, 0, true
}

// checkIovecs checks what TxBufs handed out: no canary, and nothing of a
// region whose invalidation has drained.
func (s *simSide) checkIovecs(iov [][]byte) {
	for _, b := range iov {
		g, off, ok := s.mem.locate(b)
		switch {
		case !ok:
		case g == nil:
			s.w.failf("side %s: TxBufs hands out %d octets outside every registered region (a canary)", s.name, len(b))
		case g.frozen != nil:
			s.w.failf("side %s: TxBufs hands out %d octets of %s after its %s drained", s.name, len(b), g.name, g.what)
		case g.local != nil && off < g.local.lo+g.local.n && !g.local.owned(off, len(b)):
			s.w.failf("side %s: TxBufs hands out %s [%d,%d), which no posted WR owns (its WR completed)", s.name, g.name, off, off+len(b))
		}
	}
}

// checkRxBuf checks where RxBuf asks received octets to go: staging, or
// memory a posted WR owns (a receive's or Read sink's blocks, a Write
// target the peer aimed at), never a canary, a source, a free block or a
// region whose invalidation has drained.
func (s *simSide) checkRxBuf(b []byte) {
	g, off, ok := s.mem.locate(b)
	if !ok {
		return
	}
	switch {
	case g == nil:
		s.w.failf("side %s: RxBuf points %d octets outside every registered region (a canary)", s.name, len(b))
	case g.frozen != nil:
		s.w.failf("side %s: RxBuf points %d octets into %s after its %s drained", s.name, len(b), g.name, g.what)
	case g.kind == simKindSrc:
		s.w.failf("side %s: RxBuf points %d octets into %s, which nothing may write", s.name, len(b), g.name)
	case g.local != nil && off < g.local.lo+g.local.n:
		if !g.local.owned(off, len(b)) {
			s.w.failf("side %s: RxBuf points into %s [%d,%d), which no posted WR owns", s.name, g.name, off, off+len(b))
		}
	case g.kind == simKindWzone && off+len(b) > g.wnext:
		s.w.failf("side %s: RxBuf points into %s [%d,%d), where no Write was aimed (next %d)", s.name, g.name, off, off+len(b), g.wnext)
	}
}

// checkMemory compares the canaries and frozen regions with what they must
// hold (every step), and with full set the sources, the free blocks and the
// Write zone no Write aimed at yet (every few steps and at the end).
func (s *simSide) checkMemory(full bool) {
	m := &s.mem
	prev := 0
	for _, g := range m.regions {
		if !bytes.Equal(m.backing[prev:g.off], m.orig[prev:g.off]) {
			s.w.failf("side %s: the canary before %s changed", s.name, g.name)
		}
		prev = g.off + g.n
		if g.frozen != nil && !bytes.Equal(g.bytes(), g.frozen) {
			i := simFirstDiff(g.bytes(), g.frozen)
			s.w.failf("side %s: octet %d of %s changed after its %s drained (%#x, was %#x)", s.name, i, g.name, g.what, g.bytes()[i], g.frozen[i])
		}
	}
	if !bytes.Equal(m.backing[prev:], m.orig[prev:]) {
		s.w.failf("side %s: the last canary changed", s.name)
	}
	if !full {
		return
	}
	if b := m.src.bytes(); !bytes.Equal(b, m.orig[m.src.off:m.src.off+m.src.n]) {
		s.w.failf("side %s: octet %d of the source region changed", s.name, simFirstDiff(b, m.orig[m.src.off:]))
	}
	for _, g := range m.regions {
		if g.local != nil {
			g.local.checkFree(g)
		}
		if g.kind == simKindWzone {
			lo, hi := g.off+g.wnext, g.off+g.zoneHi
			if !bytes.Equal(m.backing[lo:hi], m.shadow[lo:hi]) {
				s.w.failf("side %s: octet %d of %s changed where no Write was aimed", s.name, g.wnext+simFirstDiff(m.backing[lo:hi], m.shadow[lo:hi]), g.name)
			}
		}
	}
}

func simFirstDiff(a, b []byte) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// simAlloc hands out blocks of a region's local part to one WR at a time.
type simAlloc struct {
	lo, n int
	used  []bool
}

func newSimAlloc(lo, n int) *simAlloc {
	return &simAlloc{lo: lo, n: n, used: make([]bool, n/simBlock)}
}

// alloc finds room for n octets (a block even for 0), first fit from a
// random block, and checks that the blocks were left alone while free.
func (a *simAlloc) alloc(g *simRegion, n int) (int, bool) {
	k := max(1, (n+simBlock-1)/simBlock)
	if k > len(a.used) {
		return 0, false
	}
	w := g.m.s.w
	start := w.rng.IntN(len(a.used))
	for t := range len(a.used) {
		i := (start + t) % len(a.used)
		if i+k > len(a.used) {
			continue
		}
		free := true
		for j := i; j < i+k; j++ {
			if a.used[j] {
				free = false
				break
			}
		}
		if !free {
			continue
		}
		for j := i; j < i+k; j++ {
			a.used[j] = true
		}
		off := a.lo + i*simBlock
		at := g.off + off
		m := g.m
		if !bytes.Equal(m.backing[at:at+k*simBlock], m.shadow[at:at+k*simBlock]) {
			w.failf("side %s: octet %d of %s changed while no WR owned it", m.s.name, off+simFirstDiff(m.backing[at:at+k*simBlock], m.shadow[at:]), g.name)
		}
		return off, true
	}
	return 0, false
}

// free returns the blocks of [off, off+n) and records their content: they
// must not change until allocated again.
func (a *simAlloc) free(g *simRegion, off, n int) {
	k := max(1, (n+simBlock-1)/simBlock)
	i := (off - a.lo) / simBlock
	for j := i; j < i+k; j++ {
		a.used[j] = false
	}
	at := g.off + off
	copy(g.m.shadow[at:at+k*simBlock], g.m.backing[at:at+k*simBlock])
}

// owned reports whether [off, off+n) lies in allocated blocks.
func (a *simAlloc) owned(off, n int) bool {
	for i := (off - a.lo) / simBlock; i <= (off+n-1-a.lo)/simBlock; i++ {
		if i < 0 || i >= len(a.used) || !a.used[i] {
			return false
		}
	}
	return true
}

// checkFree compares every free block with the shadow.
func (a *simAlloc) checkFree(g *simRegion) {
	m := g.m
	for i, u := range a.used {
		if u {
			continue
		}
		at := g.off + a.lo + i*simBlock
		if !bytes.Equal(m.backing[at:at+simBlock], m.shadow[at:at+simBlock]) {
			m.s.w.failf("side %s: octet %d of %s changed while no WR owned it", m.s.name, a.lo+i*simBlock+simFirstDiff(m.backing[at:at+simBlock], m.shadow[at:]), g.name)
		}
	}
}

// aim takes n fresh octets of g's Write zone for one Write of the peer;
// ok is false when the zone is used up.
func (g *simRegion) aim(n int) (int, bool) {
	if g.wnext+n > g.zoneHi {
		return 0, false
	}
	off := g.wnext
	g.wnext += n
	return off, true
}
