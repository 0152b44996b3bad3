package rdmap

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// A chaos run: two Cores over one table and two unbounded in-memory
// pipes, driven by a seeded schedule that makes the calls the simulation's
// shell never interleaves: anything (PostSend, PostRecv, Poll, the mem
// Begins, Revoke, Close, Fail, Disconnect) between TxBufs and TxDone and
// between RxBuf and RxDone, reads and writes finished after a Close, and
// an application that, once an invalidation or deregistration drained,
// reuses the memory: it writes a poison pattern into it. Checks: no
// panic; each WR completes at most once, in posting order per queue, and
// every signaled one exactly once after both sides closed; no poison ever
// reaches a pipe (a send source or Read source read after its drain), no
// byte of a drained region changes after the poison, no canary changes;
// every invalidation drains once both Cores closed (nothing leaks a pin
// or lease).

var reviewChaosSeed = flag.Uint64("review.chaosseed", 0, "run only this chaos seed")

var reviewChaosSeeds = flag.Int("review.chaosseeds", 300, "how many chaos seeds TestReview1Chaos runs")

var reviewChaosStats = flag.Bool("review.chaosstats", false, "log what each chaos seed did")

var review1Poison = bytes.Repeat([]byte{0xEE}, 16)

const review1Canary = 0xC3

type chaosRegion struct {
	r      *mem.Region
	back   []byte            // canary | registered | canary
	inv    *mem.Invalidation // the latest Begin's, to drain by the end
	gone   *mem.Invalidation // the Begin that made it invalid for good
	frozen []byte            // the poisoned content once gone drained
	dead   bool              // not to be named any more (gone, or a WR will invalidate it)
}

type chaosSide struct {
	c        *Core
	txIov    [][]byte // handed out by TxBufs, TxDone not called yet
	txOut    bool
	rxBuf    []byte
	rxOut    bool
	closed   bool // the shell closed the connection
	halfDone bool // the shell half-closed
	eofSent  bool // RxEOF called
	nextID   uint64
	sendIDs  map[uint64]bool // signaled sends posted
	unsig    map[uint64]bool
	recvIDs  map[uint64]bool
	seen     map[[2]uint64]bool
	lastID   [2]uint64
}

type chaosWorld struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	table *mem.Table
	regs  []*chaosRegion
	side  [2]*chaosSide
	pipe  [2][]byte // pipe[i]: written by side i, not yet read by the other
	log   []string
	// beginOdds: one step in beginOdds of the Begin band runs a Begin
	// (the seed draws it: rare Begins let runs live long).
	beginOdds int
}

func (w *chaosWorld) failf(format string, args ...any) {
	w.t.Helper()
	tail := w.log
	if len(tail) > 40 {
		tail = tail[len(tail)-40:]
	}
	w.t.Fatalf("seed %d: %s\nlast steps:\n%s", w.seed, fmt.Sprintf(format, args...), joinLines(tail))
}

func joinLines(l []string) string {
	var b bytes.Buffer
	for _, s := range l {
		b.WriteString("  " + s + "\n")
	}
	return b.String()
}

func (w *chaosWorld) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf(format, args...))
}

func (w *chaosWorld) register(n int) *chaosRegion {
	back := make([]byte, n+128)
	for i := range back {
		back[i] = review1Canary
	}
	for i := 64; i < 64+n; i++ {
		back[i] = byte(i*7+int(w.seed)) % 0xE0 // never 0xEE
	}
	acc := mem.AccessLocalWrite | mem.AccessRemoteRead | mem.AccessRemoteWrite | mem.AccessRemoteAtomic | mem.AccessRemoteInvalidate
	r, err := w.table.Register(testPD, back[64:64+n], acc, 0x10000)
	if err != nil {
		w.failf("register: %v", err)
	}
	g := &chaosRegion{r: r, back: back}
	w.regs = append(w.regs, g)
	return g
}

// pick returns a random region, nearly always a valid one.
func (w *chaosWorld) pick() *chaosRegion {
	for range 40 {
		g := w.regs[w.rng.IntN(len(w.regs))]
		if !g.dead {
			return g
		}
	}
	return w.regs[w.rng.IntN(len(w.regs))]
}

func (w *chaosWorld) sge(g *chaosRegion, max int) rdma.SGE {
	n := g.r.Len()
	off := w.rng.IntN(n / 2)
	l := min(n-off, 1+w.rng.IntN(max))
	return rdma.SGE{STag: stagOf(g.r), Offset: uint64(off), Length: uint32(l)}
}

func (w *chaosWorld) postSend(i int) {
	s := w.side[i]
	g, h := w.pick(), w.pick()
	wr := SendWR{ID: s.nextID, Flags: rdma.Signaled}
	s.nextID++
	if w.rng.IntN(5) == 0 {
		wr.Flags = 0
	}
	if w.rng.IntN(6) == 0 {
		wr.Flags |= rdma.Fence
	}
	stag := uint32(h.r.STag())
	to := h.r.Base() + uint64(8*w.rng.IntN(h.r.Len()/16))
	far := min(9000, h.r.Len()) // Reads and Writes stay inside the peer's region
	switch w.rng.IntN(12) {
	case 0, 1, 2:
		wr.Op, wr.SGL = rdma.OpSend, []rdma.SGE{w.sge(g, 2000)}
	case 3:
		wr.Op, wr.SGL, wr.InvalidateSTag = rdma.OpSend, []rdma.SGE{w.sge(g, 200)}, stag
		wr.Flags |= rdma.Invalidate
		h.dead = true // the peer invalidates it: no longer handed out
	case 4, 5:
		wr.Op, wr.SGL, wr.Remote.STag, wr.Remote.TO = rdma.OpWrite, []rdma.SGE{w.sge(g, far)}, stag, h.r.Base()
	case 6, 7:
		wr.Op, wr.SGL, wr.Remote.STag, wr.Remote.TO = rdma.OpRead, []rdma.SGE{w.sge(g, far)}, stag, h.r.Base()
	case 8:
		wr.Op, wr.SGL, wr.Remote.STag, wr.Remote.TO = rdma.OpRead, []rdma.SGE{w.sge(g, far)}, stag, h.r.Base()
		wr.Flags |= rdma.Invalidate
		g.dead = true // the Read invalidates its sink
	case 9:
		wr.Op, wr.Remote.STag, wr.Remote.TO, wr.Add = rdma.OpFetchAdd, stag, to, w.rng.Uint64()&0x0101010101010101
		wr.SGL = []rdma.SGE{{STag: stagOf(g.r), Offset: 8, Length: 8}}
	case 10:
		wr.Op, wr.InvalidateSTag = rdma.OpLocalInvalidate, uint32(g.r.STag())
		g.dead = true
	default:
		wr.Op, wr.Immediate = rdma.OpImmediate, w.rng.Uint64()&0x0101010101010101
	}
	n, err := s.c.PostSend([]SendWR{wr})
	w.logf("%c PostSend %v id %d flags %d: %d %v", 'A'+i, wr.Op, wr.ID, wr.Flags, n, err)
	if n == 1 {
		if wr.Flags&rdma.Signaled != 0 {
			s.sendIDs[wr.ID] = true
		} else {
			s.unsig[wr.ID] = true
		}
	}
}

func (w *chaosWorld) postRecv(i int) {
	s := w.side[i]
	wr := RecvWR{ID: s.nextID, SGL: []rdma.SGE{w.sge(w.pick(), 9000), w.sge(w.pick(), 9000)}}
	s.nextID++
	n, _ := s.c.PostRecv([]RecvWR{wr})
	w.logf("%c PostRecv id %d: %d", 'A'+i, wr.ID, n)
	if n == 1 {
		s.recvIDs[wr.ID] = true
	}
}

func (w *chaosWorld) poll(i int) {
	s := w.side[i]
	for _, comp := range s.c.Poll(nil) {
		k := [2]uint64{uint64(comp.Queue), comp.ID}
		w.logf("%c completion %v id %d %v %v", 'A'+i, comp.Queue, comp.ID, comp.Status, comp.Err)
		if s.seen[k] {
			w.failf("side %c: WR %v completed twice", 'A'+i, k)
		}
		s.seen[k] = true
		if comp.ID < s.lastID[comp.Queue] {
			w.failf("side %c: %v completion %d after %d: out of posting order", 'A'+i, comp.Queue, comp.ID, s.lastID[comp.Queue])
		}
		s.lastID[comp.Queue] = comp.ID
		if comp.Queue == SendQueue {
			if !s.sendIDs[comp.ID] && !s.unsig[comp.ID] {
				w.failf("side %c: completion of a send WR %d never posted", 'A'+i, comp.ID)
			}
			if s.unsig[comp.ID] && comp.Status == rdma.StatusSuccess {
				w.failf("side %c: a successful unsignaled WR %d completed", 'A'+i, comp.ID)
			}
			s.c.ReleaseSend(comp.Slot)
		} else {
			if !s.recvIDs[comp.ID] {
				w.failf("side %c: completion of a receive %d never posted", 'A'+i, comp.ID)
			}
			s.c.ReleaseRecv(comp.Slot)
		}
	}
}

func (w *chaosWorld) txStart(i int) {
	s := w.side[i]
	if s.txOut && !s.closed && len(s.txIov) > 0 {
		// TxBufs again before TxDone: "the same iovecs again" (or none once
		// the QP is in ERROR).
		again := s.c.TxBufs(nil)
		if n := simIovLen(again); n != 0 && n != simIovLen(s.txIov) {
			w.failf("side %c: TxBufs again before TxDone hands out %d octets, first %d", 'A'+i, n, simIovLen(s.txIov))
		}
		return
	}
	if s.txOut || s.closed || s.halfDone {
		return
	}
	s.txIov = s.c.TxBufs(s.txIov[:0])
	s.txOut = true
	w.logf("%c TxBufs %d octets", 'A'+i, simIovLen(s.txIov))
}

func (w *chaosWorld) txEnd(i int) {
	s := w.side[i]
	if !s.txOut {
		return
	}
	total := simIovLen(s.txIov)
	n := total
	if w.rng.IntN(3) == 0 {
		n = w.rng.IntN(total + 1)
	}
	if s.closed {
		n = 0
	}
	var out []byte
	for _, b := range s.txIov {
		out = append(out, b...)
	}
	if bytes.Contains(out[:n], review1Poison) {
		w.failf("side %c writes poison: bytes of a region read after its invalidation drained", 'A'+i)
	}
	w.pipe[i] = append(w.pipe[i], out[:n]...)
	s.c.TxDone(n)
	s.txOut = false
	w.logf("%c TxDone %d of %d", 'A'+i, n, total)
}

func (w *chaosWorld) rxStart(i int) {
	s := w.side[i]
	if s.rxOut || s.closed || s.eofSent || len(w.pipe[1-i]) == 0 {
		return
	}
	s.rxBuf = s.c.RxBuf()
	s.rxOut = s.rxBuf != nil
	w.logf("%c RxBuf %d", 'A'+i, len(s.rxBuf))
}

func (w *chaosWorld) rxEnd(i int) {
	s := w.side[i]
	if !s.rxOut {
		return
	}
	src := &w.pipe[1-i]
	n := min(len(s.rxBuf), len(*src), 1+w.rng.IntN(3000))
	copy(s.rxBuf, (*src)[:n])
	*src = (*src)[n:]
	s.c.RxDone(n)
	s.rxOut = false
	w.logf("%c RxDone %d", 'A'+i, n)
}

func (w *chaosWorld) begin() {
	g := w.pick()
	switch w.rng.IntN(3) {
	case 0:
		g.inv = w.table.BeginDeregister(g.r)
		g.gone, g.dead = g.inv, true
		w.logf("BeginDeregister %#x", uint32(g.r.STag()))
	case 1:
		g.inv, _ = w.table.BeginInvalidate(g.r, g.r.STag())
		g.gone, g.dead = g.inv, true
		w.logf("BeginInvalidate %#x", uint32(g.r.STag()))
	default:
		if g.dead {
			return
		}
		_, inv, err := w.table.BeginRekey(g.r, g.r.Access())
		if err == nil {
			g.inv = inv
		}
		w.logf("BeginRekey")
	}
	w.register(256 + w.rng.IntN(12000))
}

// checkMemory poisons the dead regions whose invalidation drained and
// checks that no drained region and no canary changed.
func (w *chaosWorld) checkMemory() {
	for k, g := range w.regs {
		for j := 0; j < 64; j++ {
			if g.back[j] != review1Canary || g.back[len(g.back)-1-j] != review1Canary {
				w.failf("region %d: canary overwritten", k)
			}
		}
		if g.gone == nil || !g.gone.Drained() {
			continue
		}
		b := g.back[64 : len(g.back)-64]
		if g.frozen == nil {
			for j := range b {
				b[j] = 0xEE
			}
			g.frozen = append([]byte(nil), b...)
			w.logf("region %d drained: poisoned", k)
			continue
		}
		if !bytes.Equal(b, g.frozen) {
			w.failf("region %d changed after its invalidation drained (octet %d)", k, simFirstDiff(b, g.frozen))
		}
	}
}

func (w *chaosWorld) shell(i int) {
	s := w.side[i]
	if s.closed {
		return
	}
	if s.c.WantClose() {
		if s.c.State() != rdma.StateError {
			s.c.Close()
		}
		s.closed = true
		w.logf("%c shell closes", 'A'+i)
		return
	}
	if !s.halfDone && !s.txOut && s.c.WantHalfClose() {
		s.halfDone = true
		w.logf("%c shell half-closes", 'A'+i)
	}
	peer := w.side[1-i]
	if !s.eofSent && !s.rxOut && len(w.pipe[1-i]) == 0 && (peer.closed || peer.halfDone) {
		s.eofSent = true
		s.c.RxEOF(nil)
		w.logf("%c RxEOF", 'A'+i)
	}
}

func review1Chaos(t *testing.T, seed uint64, steps int) {
	w := &chaosWorld{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0xC0FFEE)), table: mem.NewTable(mem.TableOptions{})}
	w.beginOdds = []int{1, 4, 40}[w.rng.IntN(3)]
	o := defaults()
	o.framing = fpdu.Options{CRC: w.rng.IntN(2) == 0}
	if w.rng.IntN(3) == 0 {
		o.framing.SendMarkers, o.framing.RecvMarkers = true, true
	}
	o.mulpdu = 64 + w.rng.IntN(2000)
	o.ird = 1 + w.rng.IntN(4)
	o.ord = o.ird
	o.sq, o.rq, o.maxSGE = 8, 8, 2
	for i := range 2 {
		w.side[i] = &chaosSide{c: newCore(t, w.table, o), nextID: 1, sendIDs: map[uint64]bool{}, unsig: map[uint64]bool{},
			recvIDs: map[uint64]bool{}, seen: map[[2]uint64]bool{}}
	}
	for range 6 {
		w.register(256 + w.rng.IntN(12000))
	}
	for step := 0; step < steps; step++ {
		i := w.rng.IntN(2)
		switch r := w.rng.IntN(100); {
		case r < 10:
			w.postSend(i)
		case r < 20:
			w.postRecv(i)
		case r < 35:
			w.txStart(i)
		case r < 50:
			w.txEnd(i)
		case r < 65:
			w.rxStart(i)
		case r < 80:
			w.rxEnd(i)
		case r < 92:
			w.poll(i)
		case r < 94:
			if w.rng.IntN(w.beginOdds) == 0 {
				w.begin()
			}
		case r < 95:
			for _, g := range w.regs {
				if g.inv != nil && !g.inv.Drained() && w.rng.IntN(2) == 0 {
					w.logf("Revoke: %d holders", g.inv.Revoke())
				}
			}
		case r < 96:
			if w.rng.IntN(20) != 0 {
				break
			}
			switch w.rng.IntN(3) {
			case 0:
				w.side[i].c.Close()
				w.logf("%c Close", 'A'+i)
			case 1:
				w.side[i].c.Fail(fmt.Errorf("chaos"))
				w.logf("%c Fail", 'A'+i)
			default:
				w.side[i].c.Disconnect()
				w.logf("%c Disconnect", 'A'+i)
			}
		}
		w.shell(i)
		w.checkMemory()
		if w.side[0].closed && w.side[1].closed {
			break
		}
	}
	// End: both close; every pending read and write finishes; everything
	// completes and every invalidation drains.
	for i := range 2 {
		w.side[i].c.Close()
	}
	for i := range 2 {
		w.rxEnd(i)
		w.txEnd(i)
	}
	for i := range 2 {
		w.poll(i)
	}
	w.checkMemory()
	for k, g := range w.regs {
		if g.inv != nil && !g.inv.Drained() {
			w.failf("region %d: its invalidation never drained after both QPs closed (a pin or lease leaked)", k)
		}
	}
	for i := range 2 {
		w.poll(i)
		s := w.side[i]
		for id := range s.sendIDs {
			if !s.seen[[2]uint64{uint64(SendQueue), id}] {
				w.failf("side %c: signaled send WR %d never completed", 'A'+i, id)
			}
		}
		if *reviewChaosStats && i == 1 && *reviewChaosSeed != 0 {
			t.Logf("trace:\n%s", joinLines(w.log))
		}
		if *reviewChaosStats {
			ok := 0
			for _, l := range w.log {
				if bytes.Contains([]byte(l), []byte(" success")) {
					ok++
				}
			}
			poisoned := 0
			for _, g := range w.regs {
				if g.frozen != nil {
					poisoned++
				}
			}
			t.Logf("seed %d side %c: %d posted, %d successes in log, %d poisoned, state %v (%v)", seed, 'A'+i, len(s.sendIDs)+len(s.recvIDs), ok, poisoned, s.c.State(), s.c.Err())
		}
		for id := range s.recvIDs {
			if !s.seen[[2]uint64{uint64(RecvQueue), id}] {
				w.failf("side %c: receive %d never completed", 'A'+i, id)
			}
		}
	}
}

// TestReview1Chaos runs the chaos schedule over many seeds.
func TestReview1Chaos(t *testing.T) {
	if *reviewChaosSeed != 0 {
		review1Chaos(t, *reviewChaosSeed, 3000)
		return
	}
	for seed := uint64(1); seed <= uint64(*reviewChaosSeeds); seed++ {
		review1Chaos(t, seed, 3000)
	}
}
