package rdmap

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The deterministic simulation of two Cores (issue 17, "A deterministic
// simulation test"): two QPs A and B, each with its own STag table and
// registered memory, joined by two simulated byte pipes (simnet_test.go),
// all on one goroutine. A seeded math/rand/v2 PCG draws the configuration
// (CRC, markers, stream offsets, MULPDU, IRD/ORD, RFC 7306 and V2, queue
// depths, SRQ or receives posted before the connection, pipe capacity,
// delays), both applications' actions (every opcode, inline, signaled or
// not, fenced, malformed WRs, receives, polls, registrations invalidated,
// re-keyed and deregistered through the non-blocking mem.Begin* calls,
// leases revoked when a drain waits too long), the network's
// segmentation (down to one octet) and delays, and the faults (a side
// stops reading for a while or for good, dies inside an FPDU, a reset,
// Close, Fail or Disconnect mid-run, each hostile input of the conform
// suite). A run has an action phase, a settle phase (no new work, the
// network runs until nothing moves) and a close phase (Disconnect or
// Close on both sides, until both connections are closed).
//
// After every step: the completion ledger (sim_ledger_test.go: each
// accepted WR completes exactly once, in order per queue, each failure
// has a cause, each success the right data), the canaries around every
// region and the bytes of every region whose invalidation drained
// (sim_mem_test.go), where RxBuf and TxBufs point, and the wire monitor of
// every FPDU each side sends (sim_monitor_test.go: framing, MSNs, MULPDU,
// posting order, Fence). At the end: every Terminate's code, cause and
// attached headers (sim_check_test.go) and the hostile inputs' answers
// (sim_hostile_test.go). Stalls are failures: a wait with no octet moving
// for four op timeouts, or a phase longer than its bound.
//
// A failing seed prints the flags that replay it bit for bit and the
// shortest action phase that still fails (-sim.steps).
var (
	simSeed     = flag.Uint64("sim.seed", 1, "first seed of the deterministic simulation (TestSim)")
	simSeeds    = flag.Int("sim.seeds", 2000, "number of seeds TestSim runs, from -sim.seed on")
	simSteps    = flag.Int("sim.steps", 0, "replay with this many action steps instead of the seed's own (a shrunk schedule)")
	simTrace    = flag.Bool("sim.trace", false, "print each seed's configuration and event trace (use with -sim.seeds=1)")
	simFindings = flag.Bool("sim.findings", false, "run the simulation's findings (sim_findings_test.go): focused tests of Core bugs it found, fixed or not")
	simCaseName = flag.String("sim.case", "", "make this hostile input (a conform case name) every seed's, into an otherwise clean run")
	simCorrupt  = flag.Int64("sim.corrupt", 0, "overwrite a canary octet at this step (a check of the harness itself: the run must fail there)")
)

// simOpts select one run: the seed, and what replaces the seed's own
// draws (0: nothing).
type simOpts struct {
	seed      uint64
	steps     int   // action steps
	corrupt   int64 // the step at which a canary octet is overwritten
	keepTrace bool
	force     *simCase // the hostile input of the run (TestSimHostileCases)
}

// flags returns the command-line flags that select the run.
func (o simOpts) flags() string {
	f := fmt.Sprintf("-sim.seed=%d -sim.seeds=1", o.seed)
	if o.steps > 0 {
		f += fmt.Sprintf(" -sim.steps=%d", o.steps)
	}
	if o.corrupt > 0 {
		f += fmt.Sprintf(" -sim.corrupt=%d", o.corrupt)
	}
	if o.force != nil {
		f += fmt.Sprintf(" -sim.case=%s", o.force.name)
	}
	return f
}

// simFlagOpts returns the options the command line asks for.
func simFlagOpts(t *testing.T) simOpts {
	o := simOpts{seed: *simSeed, steps: *simSteps, corrupt: *simCorrupt}
	if *simCaseName != "" {
		for _, k := range simCases {
			if k.name == *simCaseName {
				o.force = k
			}
		}
		if o.force == nil {
			t.Fatalf("-sim.case=%s: no such hostile input", *simCaseName)
		}
	}
	return o
}

// TestSim runs -sim.seeds seeds from -sim.seed on, on every CPU, and
// reports the smallest failing seed with the flags that replay it.
func TestSim(t *testing.T) {
	n := *simSeeds
	if (testing.Short() || simRace) && !simFlagSet("sim.seeds") {
		n = min(n, 200)
	}
	start := time.Now()
	o := simFlagOpts(t)
	res := simRunSeeds(o, n, runtime.GOMAXPROCS(0))
	t.Logf("%d seeds from %d in %v: %s", n, *simSeed, time.Since(start).Round(time.Millisecond), res.stats)
	if *simTrace && n == 1 {
		o.keepTrace = true
		w := simRun(o)
		t.Logf("configuration: %s\n%s", w.cfg, w.traceText(0))
	}
	if res.fail != nil {
		t.Fatal(simReport(res.fail))
	}
	if n >= 2000 && o.force == nil && o.steps == 0 && o.corrupt == 0 {
		for _, g := range res.stats.cover.gaps() {
			t.Errorf("%d seeds never exercised %s", n, g)
		}
	}
}

// simFlagSet reports whether the flag was given on the command line.
func simFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// simResult is the outcome of a range of seeds.
type simResult struct {
	fail  *simWorld // the smallest failing seed's world, or nil
	stats simStats
}

// simRunSeeds runs n seeds from o.seed on workers goroutines; each seed is
// one independent world, so the outcome does not depend on the number of
// workers.
func simRunSeeds(o simOpts, n, workers int) simResult {
	first := o.seed
	var (
		mu   sync.Mutex
		res  simResult
		next = first
		end  = first + uint64(n)
		wg   sync.WaitGroup
	)
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= end || (res.fail != nil && next > res.fail.seed) {
					mu.Unlock()
					return
				}
				seed := next
				next++
				mu.Unlock()
				so := o
				so.seed = seed
				w := simRun(so)
				mu.Lock()
				res.stats.add(w)
				if w.failure != "" && (res.fail == nil || seed < res.fail.seed) {
					res.fail = w
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// simRun runs one seed to its end or its first failure.
func simRun(o simOpts) (w *simWorld) {
	w = newSimWorld(o)
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(simAbort); !ok {
				buf := make([]byte, 16<<10)
				buf = buf[:runtime.Stack(buf, false)]
				w.failure = fmt.Sprintf("panic: %v\n%s", r, buf)
				w.failStep = w.now
			}
		}
	}()
	w.run()
	return w
}

// simReport describes a failing seed: what failed, the flags that replay
// it, a shorter schedule that fails the same way (if any), and the last
// events of the trace.
func simReport(w *simWorld) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d failed at step %d (%s): %s\n", w.seed, w.failStep, w.phase, w.failure)
	fmt.Fprintf(&b, "replay: go test ./internal/rdmap -run 'TestSim$' %s -sim.trace\n", w.opts.flags())
	if m := simShrink(w); m != nil {
		fmt.Fprintf(&b, "shortest schedule that fails: %s (%d action steps instead of %d): %s\n",
			m.opts.flags(), m.cfg.steps, w.cfg.steps, simFirstLine(m.failure))
	}
	fmt.Fprintf(&b, "configuration: %s\n", w.cfg)
	b.WriteString(w.traceText(60))
	return b.String()
}

// simShrink looks for the shortest action phase (the seed's draws are the
// same up to it, then the run settles and closes) that fails with the same
// first line: a bisection, at most a dozen replays.
func simShrink(w *simWorld) *simWorld {
	want := simFirstLine(w.failure)
	lo, hi := 0, w.cfg.steps
	var best *simWorld
	for i := 0; i < 12 && lo < hi; i++ {
		mid := (lo + hi) / 2
		o := w.opts
		o.steps, o.keepTrace = max(mid, 1), false
		m := simRun(o)
		if m.failure != "" && simFirstLine(m.failure) == want {
			hi, best = mid, m
		} else {
			lo = mid + 1
		}
	}
	if best == nil || best.cfg.steps >= w.cfg.steps {
		return nil
	}
	return best
}

func simFirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestSimReplay checks that a seed replays bit for bit: two runs of the
// same seed give the same trace hash, and different seeds differ.
func TestSimReplay(t *testing.T) {
	seeds := []uint64{1, 2, 3, 77, 1000}
	hashes := map[uint64]uint64{}
	for _, s := range seeds {
		a, b := simRun(simOpts{seed: s}), simRun(simOpts{seed: s})
		if a.hash != b.hash || a.now != b.now || a.failure != b.failure {
			t.Fatalf("seed %d does not replay: hash %#x then %#x, %d then %d steps, failure %q then %q",
				s, a.hash, b.hash, a.now, b.now, simFirstLine(a.failure), simFirstLine(b.failure))
		}
		if prev, ok := hashes[a.hash]; ok {
			t.Fatalf("seeds %d and %d have the same trace hash %#x", prev, s, a.hash)
		}
		hashes[a.hash] = s
	}
}
