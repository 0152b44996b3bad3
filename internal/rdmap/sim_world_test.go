package rdmap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

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

// simTableRandom is a deterministic STag source for one side's table.
func simTableRandom(seed uint64, side int) func() uint32 {
	r := rand.New(rand.NewPCG(seed, uint64(side)+0x7AB1E))
	return func() uint32 { return r.Uint32() }
}

// newTable returns side i's STag table.
func (w *simWorld) newTable(i int) *mem.Table {
	return mem.NewTable(mem.TableOptions{Random: simTableRandom(w.seed, i)})
}
