package rdmap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
)

// simWorld is one run of the simulation: the configuration drawn from the
// seed, two sides and two pipes, the clock (one step per event) and the
// trace.
type simWorld struct {
	seed  uint64
	opts  simOpts
	rng   *rand.Rand
	cfg   simConfig
	now   int64
	phase simPhase
	sides [2]*simSide
	pipes [2]*simPipe // pipes[i] carries side i's output to side 1-i

	// The outcome: the first violation found (empty: none) and its step.
	failure  string
	failStep int64

	hash      uint64
	keepTrace bool
	trace     []simEvent
	ring      [simTraceLen]simEvent
	nev       int

	moved       bool  // an octet moved in this step
	stuckAt     int64 // the step stuckNow was computed for
	stuckNow    bool
	cover       simCover
	hostileDone bool  // the hostile input was sent
	hostileStep int64 // when
	hostile     *simSession
}

// simAbort unwinds a run at its first failure.
type simAbort struct{}

// simPhase is the part of a run: application actions, then settling (no
// new work, the network runs until it is quiet), then closing.
type simPhase uint8

const (
	simPhaseSetup simPhase = iota
	simPhaseActions
	simPhaseSettle
	simPhaseClose
	simPhaseDone
)

func (p simPhase) String() string {
	return [...]string{"setup", "actions", "settle", "close", "done"}[p]
}

// Step bounds of the settle and close phases: each must end within
// simPhaseBound steps, and no octet may stay still for more than
// simStillFactor op timeouts (a wait on a dead peer ends with the op
// timeout long before; a slow network still moves).
const (
	simPhaseBound  = 1 << 20
	simStillFactor = 4
)

// Why the simulated shell fails a Core (Core.Fail): its op timeout fired,
// or the socket failed.
var (
	errSimTimeout = errors.New("simulated operation timeout: no progress")
	errSimDied    = errors.New("simulated process died")
)

func newSimWorld(o simOpts) *simWorld {
	w := &simWorld{seed: o.seed, opts: o, keepTrace: o.keepTrace, rng: rand.New(rand.NewPCG(o.seed, 0x1D_5EED)), hash: 0xcbf29ce484222325}
	w.cfg = simDrawConfig(w.rng)
	if o.steps > 0 {
		w.cfg.steps = o.steps
	}
	if o.force != nil {
		w.cfg.forceCase(o.force, int(o.seed%2))
	}
	return w
}

// failf records the first violation and ends the run.
func (w *simWorld) failf(format string, args ...any) {
	if w.failure == "" {
		w.failure = fmt.Sprintf(format, args...)
		w.failStep = w.now
	}
	panic(simAbort{})
}

func (w *simWorld) setPhase(p simPhase) {
	w.phase = p
	w.ev(-1, simEvPhase, uint64(p), 0)
}

// run is the whole life of the world.
func (w *simWorld) run() {
	w.setup()
	w.setPhase(simPhaseActions)
	for w.now < int64(w.cfg.steps) {
		w.step(true)
	}
	w.setPhase(simPhaseSettle)
	w.runUntil(w.quiet, "the network did not settle after the last action")
	w.checkSettled()
	w.setPhase(simPhaseClose)
	for _, s := range w.sides {
		w.closeApp(s)
	}
	w.runUntil(w.ended, "the run did not end after Disconnect/Close")
	w.setPhase(simPhaseDone)
	w.final()
}

// runUntil steps without application actions until done reports true,
// within the step bounds.
func (w *simWorld) runUntil(done func() bool, what string) {
	start, still := w.now, w.now
	for !done() {
		switch {
		case w.now-start > simPhaseBound:
			w.failf("%s within %d steps: %s", what, simPhaseBound, w.stateText())
		case w.now-still > simStillFactor*w.cfg.opTimeout:
			w.failf("%s: no octet moved for %d steps: %s", what, w.now-still, w.stateText())
		}
		w.step(false)
		if w.moved {
			still = w.now
		}
	}
}

// setup builds both sides: memory, Cores, pipes, monitors.
func (w *simWorld) setup() {
	c := &w.cfg
	for i := range w.pipes {
		w.pipes[i] = newSimPipe(c.pipeCap[i])
	}
	for i := range w.sides {
		w.sides[i] = newSimSide(w, i)
	}
	for _, s := range w.sides {
		s.peer = w.sides[1-s.idx]
	}
	for _, s := range w.sides {
		s.start()
	}
	if h := c.hostile; h != nil {
		w.sides[c.victim].registerConformSlots()
	}
}

// step is one event: the clock advances, faults due now happen, then one
// randomly chosen thing moves (a write, a read, an application action or
// a poll), then the shell's duties and the invariants.
func (w *simWorld) step(actions bool) {
	w.now++
	w.moved = false
	if w.now == w.opts.corrupt {
		w.sides[0].mem.backing[0] ^= 0xFF // the first canary octet
	}
	w.faultsDue()
	s := w.sides[w.rng.IntN(2)]
	switch r := w.rng.IntN(100); {
	case r < 32:
		w.pumpTx(s)
	case r < 64:
		w.pumpRx(s)
	case r < 88 && actions && !s.frozen:
		s.action()
	default:
		s.poll()
	}
	for _, s := range w.sides {
		w.shellDuties(s)
	}
	w.checkStep()
}

// segLen draws how many octets one write or read moves, at most limit.
func (w *simWorld) segLen(limit int) int {
	if limit <= 1 {
		return limit
	}
	var n int
	switch w.rng.IntN(8) {
	case 0:
		n = 1
	case 1, 2:
		n = 1 + w.rng.IntN(16)
	default:
		n = 1 + w.rng.IntN(w.cfg.maxSeg)
	}
	return min(n, limit)
}

// delay draws a write's delivery delay in steps.
func (w *simWorld) delay() int64 {
	if w.cfg.maxDelay == 0 {
		return 0
	}
	return int64(w.rng.IntN(w.cfg.maxDelay + 1))
}

// pumpTx writes some of what side s's Core has to send into its pipe.
func (w *simWorld) pumpTx(s *simSide) {
	if s.closed || s.dead {
		return
	}
	if s.txDetached {
		w.pumpInject(s)
		return
	}
	s.iov = s.core.TxBufs(s.iov[:0])
	total := simIovLen(s.iov)
	if total == 0 {
		s.core.TxDone(0)
		return
	}
	if s.halfClosed {
		// The socket is half-closed: the write could only fail (EPIPE).
		// (Found by the simulation, fixed in the Core:
		// TestSimFindingOutputAfterHalfClose.)
		w.failf("side %s: TxBufs hands out %d octets after WantHalfClose", s.name, total)
	}
	s.checkIovecs(s.iov)
	n := w.segLen(min(total, s.out.room()))
	lim, dying := w.txLimit(s)
	if s.dead {
		s.core.TxDone(0)
		return
	}
	if dying {
		n = min(n, lim)
	}
	if n == 0 {
		s.core.TxDone(0)
		return
	}
	if cap(s.txTmp) < n {
		s.txTmp = make([]byte, n+n/2)
	}
	tmp := s.txTmp[:0]
	for _, b := range s.iov {
		if len(tmp) == n {
			break
		}
		tmp = append(tmp, b[:min(len(b), n-len(tmp))]...)
	}
	d := w.delay()
	k, err := s.out.write(tmp, w.now, d)
	s.core.TxDone(k)
	if err != nil {
		w.ev(s.idx, simEvFail, 1, 0)
		s.core.Fail(&ConnectionError{Err: err})
		return
	}
	if k == 0 {
		return
	}
	w.moved = true
	w.ev(s.idx, simEvTx, uint64(k), uint64(d))
	s.mon.feed(tmp[:k])
	if dying {
		w.die(s)
	}
}

// pumpInject writes some of a hostile input, then the FIN after it.
func (w *simWorld) pumpInject(s *simSide) {
	if len(s.inject) == 0 {
		if !s.out.eof {
			s.out.closeWrite(nil, w.now, w.delay())
		}
		return
	}
	n := w.segLen(min(len(s.inject), s.out.room()))
	k, err := s.out.write(s.inject[:n], w.now, w.delay())
	if err != nil {
		s.inject = nil
		return
	}
	s.inject = s.inject[k:]
	w.moved = w.moved || k > 0
	w.ev(s.idx, simEvInject, uint64(k), 0)
}

// pumpRx reads some delivered octets into side s's Core, or tells it the
// stream ended.
func (w *simWorld) pumpRx(s *simSide) {
	if s.closed || s.dead || s.stopReading || s.eofDelivered {
		return
	}
	avail := s.in.readable(w.now)
	if avail == 0 {
		if eof, err := s.in.atEOF(w.now); eof {
			s.eofDelivered = true
			var x uint64
			if err != nil {
				x = 1
			}
			w.ev(s.idx, simEvRxEOF, x, 0)
			s.core.RxEOF(err)
		}
		return
	}
	buf := s.core.RxBuf()
	if len(buf) == 0 {
		if buf != nil {
			s.core.RxDone(0)
		}
		return
	}
	s.checkRxBuf(buf)
	n := w.segLen(min(len(buf), avail))
	s.in.readInto(buf[:n], w.now)
	s.core.RxDone(n)
	w.moved = w.moved || n > 0
	w.ev(s.idx, simEvRx, uint64(n), 0)
}

// shellDuties is what the shell does for a Core between events: close the
// connection when the Core wants it, run the op timeout, watch pending
// invalidations (revoking those that waited too long).
func (w *simWorld) shellDuties(s *simSide) {
	switch {
	case s.closed || s.dead:
	case s.core.WantClose():
		if s.core.State() != StateError {
			s.core.Close()
		}
		w.closeConn(s)
	case !s.halfClosed && s.core.WantHalfClose():
		if q := s.txQueued(); q > 0 {
			w.failf("side %s: WantHalfClose with %d octets still to send", s.name, q)
		}
		s.out.closeWrite(nil, w.now, w.delay())
		s.halfClosed, s.halfAt = true, w.now
		w.cover.halfClose++
		w.ev(s.idx, simEvHalfClose, 0, 0)
	case s.halfClosed && w.now-s.halfAt > w.cfg.opTimeout:
		// The drain after the half-close is over: close.
		w.ev(s.idx, simEvClose, 1, 0)
		s.core.Close()
	}
	s.watchInvalidations()
	if s.woken > 0 && !s.dead {
		s.woken = 0
		s.poll()
	}
	if s.closed || s.dead {
		return
	}
	// The op timeout's clock runs only while no octet can move anywhere
	// (a slow but busy network is no stall: a real op timeout is long
	// next to it).
	if p := s.core.Progress(); !s.core.Waiting() || p != s.prog {
		s.prog, s.idle = p, 0
		return
	}
	if !w.stuck() {
		return
	}
	s.idle++
	if s.idle > w.cfg.opTimeout {
		w.ev(s.idx, simEvTimeout, 0, 0)
		if w.cfg.clean() {
			w.failf("side %s: op timeout in a run without faults or risky work: the Core waited on its peer %d idle steps without progress (%s)",
				s.name, w.cfg.opTimeout, w.stateText())
		}
		s.core.Fail(&ConnectionError{Err: errSimTimeout})
		s.idle = 0
	}
}

// stuck reports whether no octet can move in either direction now or
// after the pending delays: every reader has nothing to read (or does not
// read), every writer has nothing to write or no room.
func (w *simWorld) stuck() bool {
	if w.stuckAt == w.now {
		return w.stuckNow
	}
	w.stuckAt, w.stuckNow = w.now, false
	for _, s := range w.sides {
		if s.closed || s.dead {
			continue
		}
		if !s.stopReading && (s.in.queued() > 0 || s.in.eof && !s.eofDelivered) {
			return false
		}
		if s.txDetached && len(s.inject) > 0 && s.out.room() > 0 {
			return false
		}
		if !s.txDetached && !s.out.eof && s.out.room() > 0 && s.txQueued() > 0 {
			return false
		}
	}
	w.stuckNow = true
	return true
}

// closeConn closes side s's connection, as the shell does when the Core
// wants it: the peer reads what was sent, then EOF (a reset if s had input
// it never read), and what the peer sends from now on is dropped.
func (w *simWorld) closeConn(s *simSide) {
	unread := s.in.closeRead()
	if len(s.mon.buf) > 0 && !s.cutMidFPDU {
		s.cutMidFPDU = true
		w.cover.cut++
	}
	var err error
	var x uint64
	if unread {
		err, x = errSimReset, 1
	}
	s.out.closeWrite(err, w.now, w.delay())
	s.closed = true
	w.ev(s.idx, simEvWantClose, x, 0)
}

// closeApp ends side s's application at the close phase: Disconnect (an
// orderly close) or, sometimes and for dead or hostile sides, Close.
func (w *simWorld) closeApp(s *simSide) {
	switch {
	case s.dead || s.txDetached:
		w.ev(s.idx, simEvClose, 0, 0)
		s.core.Close()
	case w.cfg.clean() || w.rng.IntN(4) != 0:
		w.ev(s.idx, simEvDisconnect, 0, 0)
		s.core.Disconnect()
	default:
		w.ev(s.idx, simEvClose, 0, 0)
		s.core.Close()
	}
	s.frozen = true
}

// quiet reports whether nothing moves any more without a new action: no
// octet queued in a pipe or a Core, no Core waiting on its peer.
func (w *simWorld) quiet() bool {
	for _, s := range w.sides {
		if s.closed || s.dead {
			continue
		}
		if s.in.queued() > 0 && !s.stopReading {
			return false
		}
		if eof, _ := s.in.atEOF(w.now); eof && !s.eofDelivered && !s.stopReading {
			return false
		}
		if s.txDetached && len(s.inject) > 0 || !s.txDetached && s.txQueued() > 0 && s.out.room() > 0 {
			return false
		}
		if s.core.Waiting() || s.core.WantClose() || s.pendingInvalidations() {
			return false
		}
	}
	return true
}

// ended reports whether both connections are closed and nothing is left
// to deliver.
func (w *simWorld) ended() bool {
	for _, s := range w.sides {
		if !s.closed && !s.dead {
			return false
		}
		if s.pendingInvalidations() {
			return false
		}
	}
	return true
}

// stateText describes both sides for a failure message.
func (w *simWorld) stateText() string {
	var b strings.Builder
	for i, s := range w.sides {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: state %v, err %v, waiting %v, want-close %v, closed %v, tx queued %d, pipe out %d (room %d), pipe in %d (readable %d)",
			s.name, s.core.State(), s.core.Err(), s.core.Waiting(), s.core.WantClose(), s.closed,
			s.txQueued(), s.out.queued(), s.out.room(), s.in.queued(), s.in.readable(w.now))
	}
	return b.String()
}

// txQueued is how many octets the Core has to send (TxBufs, given back
// at once with TxDone(0)).
func (s *simSide) txQueued() int {
	s.iov = s.core.TxBufs(s.iov[:0])
	n := simIovLen(s.iov)
	s.core.TxDone(0)
	return n
}

func simIovLen(iov [][]byte) int {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	return n
}

// framing returns side i's framing options.
func (c *simConfig) framing(i int) fpdu.Options {
	return fpdu.Options{CRC: c.crc, SendMarkers: c.markers[i], RecvMarkers: c.markers[1-i]}
}

// params returns side i's negotiated parameters.
func (c *simConfig) params(i int) Params {
	return Params{
		IRD: c.ird[i], ORD: c.ird[1-i], MULPDU: c.mulpdu[i],
		FirstSendMSN: c.firstSend[i], FirstReadMSN: c.firstRead[i],
		FirstPeerSendMSN: c.firstSend[1-i], FirstPeerReadMSN: c.firstRead[1-i],
		RFC7306: c.rfc7306, V2: c.v2,
	}
}

// simTableRandom is a deterministic STag source for one side's table.
func simTableRandom(seed uint64, side int) func() uint32 {
	r := rand.New(rand.NewPCG(seed, uint64(side)+0x7AB1E))
	return func() uint32 { return r.Uint32() }
}

// newTable returns side i's STag table.
func (w *simWorld) newTable(i int) *mem.Table {
	return mem.NewTable(mem.TableOptions{Random: simTableRandom(w.seed, i)})
}
