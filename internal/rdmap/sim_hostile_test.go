package rdmap

import (
	"bytes"
	"encoding/binary"
	"errors"

	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/goiwarp/iwarp/internal/conform"
	"github.com/goiwarp/iwarp/rdma"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// The hostile inputs of the conform suite (internal/conform), ported: at
// a random step one side's transmitter is replaced, at a message boundary
// of its stream, by one case's segments (framed where the stream is: its
// markers and CRC, its next MSNs), followed by a FIN. The victim must
// answer as the case prescribes: the Terminate code of docs/wire.md (and
// the exact Terminate of RFC 5040 §4.8 with the offending segment's
// headers attached), or no Terminate. The cases name the victim's memory
// as conform's advertisement does (main, read-only, other-PD, invalidated,
// re-keyed, write-only regions: registerConformSlots).

// The conform advertisement's slots.
const (
	simSlotMain = iota
	simSlotReadOnly
	simSlotOtherPD
	simSlotInvalidated
	simSlotRekeyed
	simSlotWriteOnly
	simNumSlots
)

var simSlotNames = [simNumSlots]string{"main", "read-only", "other-PD", "invalidated", "re-keyed", "write-only"}

var simConformSpecs = [simNumSlots]struct {
	n      int
	access mem.Access
}{
	simSlotMain:        {65536, mem.AccessLocalWrite | mem.AccessRemoteRead | mem.AccessRemoteWrite | mem.AccessRemoteAtomic},
	simSlotReadOnly:    {256, mem.AccessRemoteRead},
	simSlotOtherPD:     {256, mem.AccessRemoteRead | mem.AccessRemoteWrite},
	simSlotInvalidated: {256, mem.AccessRemoteWrite},
	simSlotRekeyed:     {256, mem.AccessRemoteWrite},
	simSlotWriteOnly:   {256, mem.AccessRemoteWrite},
}

// registerConformSlots registers the victim's advertised regions: the
// other-PD one in another protection domain, the invalidated one
// deregistered (drained at once: nothing uses it), the re-keyed one with a
// new key (its old STag is what the cases name).
func (s *simSide) registerConformSlots() {
	m := &s.mem
	for i, g := range m.conform {
		if i == simSlotOtherPD {
			g.pd = s.pd + 100
		}
		m.register(g)
		switch i {
		case simSlotInvalidated:
			inv := s.table.BeginDeregister(g.r)
			if !inv.Drained() {
				s.w.failf("side %s: deregistering an unused region did not drain at once", s.name)
			}
			g.old, g.state, g.stag = append(g.old, g.stag), simRegGone, 0
			g.freeze("deregistration")
		case simSlotRekeyed:
			stag, inv, err := s.table.BeginRekey(g.r, g.access)
			if err != nil || !inv.Drained() {
				s.w.failf("side %s: re-keying an unused region: %v, drained %v", s.name, err, inv != nil && inv.Drained())
			}
			g.old, g.stag = append(g.old, g.stag), uint32(stag)
		}
	}
}

// simNeed is what a case needs of the configuration.
type simNeed uint16

const (
	simNeedCRC       simNeed = 1 << iota
	simNeedMarkers           // the hostile side sends markers
	simNeedNoMarkers         // it does not (the case frames by hand)
	simNeedNoRFC7306
	simNeedV2
	simNeedNoV2
	simNeedNoORD // the victim has no Read or atomic outstanding (checked at the step)
	simNeedFast  // a network that moves a MiB in reasonable time
)

// simCase is one hostile input.
type simCase struct {
	name   string
	needs  simNeed
	script func(s *simSession)
}

// simSession builds a case's octets and records what the victim must do.
type simSession struct {
	w    *simWorld
	v, h *simSide
	rv   uint8
	enc  *fpdu.Encoder
	msn  [4]uint32
	out  []byte
	crc  bool
	mark bool

	kind      conform.WantKind
	codes     []rdma.TermCode
	attach    conform.Attach
	offending *conform.ULPDU
	done      bool // a segment the victim refuses is sent: the rest does not matter

	recvUsed       int
	stopReadingFor int64
	// consumers is how many messages taking a receive the hostile side
	// had sent before the input: the victim's later receives are the
	// input's.
	consumers int
}

// simPickCase draws a case that the configuration allows.
func simPickCase(rng *rand.Rand, c *simConfig) *simCase {
	h := 1 - c.victim
	var ok []*simCase
	for _, k := range simCases {
		n := k.needs
		switch {
		case n&simNeedCRC != 0 && !c.crc,
			n&simNeedMarkers != 0 && !c.markers[h],
			n&simNeedNoMarkers != 0 && c.markers[h],
			n&simNeedNoRFC7306 != 0 && c.rfc7306,
			n&simNeedV2 != 0 && !c.v2,
			n&simNeedNoV2 != 0 && c.v2,
			n&simNeedFast != 0 && (c.maxSeg < 1500 || min(c.pipeCap[0], c.pipeCap[1]) < 4096):
			continue
		}
		ok = append(ok, k)
	}
	return ok[rng.IntN(len(ok))]
}

// hostileTick runs from the case's step on until the input is sent: it
// freezes both applications, waits for a message boundary in the hostile
// side's stream, and then replaces its transmitter by the case's octets.
func (w *simWorld) hostileTick() {
	c := &w.cfg
	v, h := w.sides[c.victim], w.sides[1-c.victim]
	v.frozen, h.frozen = true, true
	if v.closed || v.dead || h.closed || h.dead || v.core.State() != rdma.StateRTS || w.now > c.hostileAt+4*c.opTimeout {
		c.hostile = nil // the chance has gone: the run goes on without it
		return
	}
	// At a message boundary, and with none of the hostile side's Reads
	// or atomics outstanding (so the victim's IRQ is empty when a case's
	// request arrives).
	if !h.mon.boundary() || h.outboundPending() {
		return
	}
	k := c.hostile
	if k.needs&simNeedNoORD != 0 && v.outboundPending() {
		return
	}
	s := &simSession{w: w, v: v, h: h, rv: wire.RDMAPVersion1, crc: c.crc, mark: c.markers[h.idx]}
	if c.v2 {
		s.rv = wire.RDMAPVersion2
	}
	s.enc = fpdu.NewEncoder(c.framing(h.idx), h.mon.offset())
	s.msn = h.mon.next
	s.consumers = h.mon.consumers
	k.script(s)
	h.txDetached, h.mon.detached = true, true
	h.inject = s.out
	w.hostile, w.hostileDone, w.hostileStep = s, true, w.now
	w.cover.injected++
	if s.stopReadingFor > 0 {
		h.stopReading = true
		h.resumeAt = w.now + s.stopReadingFor
	}
	w.simEvNote(h.idx, simEvInject, uint64(len(s.out)), 0, k.name)
}

// checkHostile checks the victim's answer to the hostile input (term is
// its Terminate on the wire, or nil).
func (w *simWorld) checkHostile(v *simSide, term *simTerm) {
	s := w.hostile
	name := w.cfg.hostile.name
	var te *TerminateError
	sent := errors.As(v.core.Err(), &te) && te.Sent
	switch s.kind {
	case conform.WantTerminate:
		code := rdma.TermCode(0)
		switch {
		case term != nil:
			code = term.t.Code
		case sent:
			code = te.Code // decided, not written (the peer does not read)
		default:
			w.failf("hostile input %s: side %s sent no Terminate (its error: %v), want %v", name, v.name, v.core.Err(), s.codes)
		}
		if !slices.Contains(s.codes, code) {
			w.failf("hostile input %s: side %s sent Terminate %v (%v), want %v", name, v.name, code, v.core.Err(), s.codes)
		}
		if term != nil && len(s.codes) == 1 && s.offending != nil {
			want := conform.TerminateULPDU(s.rv, code, s.attach, *s.offending)
			if !bytes.Equal(term.ulpdu, want) {
				w.failf("hostile input %s: side %s's Terminate is\n% x\nwant (RFC 5040 §4.8, the offending segment's headers attached)\n% x", name, v.name, term.ulpdu, want)
			}
		}
	case conform.WantAccept, conform.WantClosed:
		if term != nil || sent {
			w.failf("hostile input %s: side %s sent Terminate (%v), want none", name, v.name, v.core.Err())
		}
	case conform.WantTeardown:
		if term != nil && term.t.Code != rdma.TermLLPConnLost {
			w.failf("hostile input %s: side %s sent Terminate %v, want none or %v", name, v.name, term.t.Code, rdma.TermLLPConnLost)
		}
	}
}

// Session helpers: the conform Session's, on the simulated stream.

func (s *simSession) nextMSN(qn uint32) uint32 {
	m := s.msn[qn]
	s.msn[qn]++
	return m
}

// offset is the stream offset of the next octet the session frames.
func (s *simSession) offset() uint64 { return s.h.mon.offset() + uint64(len(s.out)) }

// frame returns the FPDU carrying u where the stream is.
func (s *simSession) frame(u conform.ULPDU) []byte {
	if err := s.enc.AppendCopy(u.Bytes); err != nil {
		panic(fmt.Sprintf("framing a hostile segment: %v", err))
	}
	var b []byte
	for _, v := range s.enc.Bufs(nil) {
		b = append(b, v...)
	}
	s.enc.Done(len(b))
	return b
}

func (s *simSession) send(u conform.ULPDU) {
	if !s.done {
		s.out = append(s.out, s.frame(u)...)
	}
}

// offend sends u as the segment the victim must refuse with code.
func (s *simSession) offend(u conform.ULPDU, code rdma.TermCode, a conform.Attach) {
	if s.done {
		return
	}
	s.send(u)
	s.offending, s.kind, s.codes, s.attach, s.done = &u, conform.WantTerminate, []rdma.TermCode{code}, a, true
}

func (s *simSession) raw(b []byte) {
	if !s.done {
		s.out = append(s.out, b...)
	}
}

func (s *simSession) want(k conform.WantKind) {
	if !s.done {
		s.kind = k
	}
}

// recv takes the victim's next receive for a Send whose first segment u
// carries n octets; if there is none, or it is too short, u is the
// offending segment.
func (s *simSession) recv(u conform.ULPDU, n int) bool {
	if s.done {
		return false
	}
	k := s.h.mon.consumers + s.recvUsed
	if k >= len(s.v.rq) {
		s.offend(u, rdma.TermDDPNoBuffer, conform.AttachDDP)
		return false
	}
	if s.v.rq[k].n < n {
		s.offend(u, rdma.TermDDPTooLong, conform.AttachDDP)
		return false
	}
	s.recvUsed++
	return true
}

// recvCap is the capacity of the victim's next receive (-1: none).
func (s *simSession) recvCap() int {
	k := s.h.mon.consumers + s.recvUsed
	if k >= len(s.v.rq) {
		return -1
	}
	return s.v.rq[k].n
}

type simRemote struct {
	stag uint32
	to   uint64
	n    uint32
}

func (s *simSession) slot(i int) simRemote {
	g := s.v.mem.conform[i]
	stag := g.stag
	if i == simSlotInvalidated || i == simSlotRekeyed {
		stag = g.old[0]
	}
	return simRemote{stag: stag, to: g.base, n: uint32(g.n)}
}

func (s *simSession) main() simRemote { return s.slot(simSlotMain) }

func (s *simSession) unknownSTag() uint32 { return s.main().stag ^ 0x5A5A00 }

func (s *simSession) sendMsg(p []byte) conform.ULPDU {
	return conform.Untagged(s.rv, wire.OpSend, true, wire.QNSend, s.nextMSN(wire.QNSend), 0, p)
}

func simPattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0xA0 + i%16)
	}
	return b
}

func simPutInvSTag(b []byte, stag uint32) { binary.BigEndian.PutUint32(b[2:], stag) }

// outboundPending reports whether a Read or atomic of s is outstanding or
// still to be sent.
func (s *simSide) outboundPending() bool {
	if s.core.ORDInUse() > 0 {
		return true
	}
	for _, e := range s.sq[s.sqDone:] {
		if !e.done && outbound(e.shape()) {
			return true
		}
	}
	return false
}
