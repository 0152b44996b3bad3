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
// simulation test"): requester A and responder B, each with its own STag
// table and registered memory, joined by two simulated byte pipes
// (simnet_test.go), all on one goroutine. A seeded math/rand/v2 PCG draws
// the configuration (CRC, markers, MULPDU, IRD/ORD, extensions, queue
// depths, SRQ, pipe capacity, delays), the application's actions (every
// opcode, polls, registration churn through the non-blocking mem.Begin*
// calls, Disconnect, Close), the network's segmentation and delays and the
// peer faults (stops reading, dies inside an FPDU, resets, each hostile
// input of the conform suite). After every step the invariants are checked
// (sim_check_test.go). A failing seed prints the flags that replay it bit
// for bit, and the shortest action phase that still fails.
var (
	simSeed     = flag.Uint64("sim.seed", 1, "first seed of the deterministic simulation (TestSim)")
	simSeeds    = flag.Int("sim.seeds", 2000, "number of seeds TestSim runs, from -sim.seed on")
	simSteps    = flag.Int("sim.steps", 0, "replay with this many action steps instead of the seed's own (a shrunk schedule)")
	simTrace    = flag.Bool("sim.trace", false, "print each seed's configuration and event trace (use with -sim.seeds=1)")
	simFindings = flag.Bool("sim.findings", false, "run the simulation's findings (sim_findings_test.go): Core bugs it found that may not be fixed yet")
)

// TestSim runs -sim.seeds seeds from -sim.seed on, on every CPU, and
// reports the smallest failing seed with the flags that replay it.
func TestSim(t *testing.T) {
	n := *simSeeds
	if testing.Short() {
		n = min(n, 200)
	}
	start := time.Now()
	res := simRunSeeds(*simSeed, n, *simSteps, runtime.GOMAXPROCS(0))
	t.Logf("%d seeds from %d in %v: %s", n, *simSeed, time.Since(start).Round(time.Millisecond), res.stats)
	if *simTrace && n == 1 {
		w := simRun(*simSeed, *simSteps, true)
		t.Logf("configuration: %s\n%s", w.cfg, w.traceText(0))
	}
	if res.fail != nil {
		t.Fatal(simReport(res.fail, *simSteps))
	}
}

// simResult is the outcome of a range of seeds.
type simResult struct {
	fail  *simWorld // the smallest failing seed's world, or nil
	stats simStats
}

// simRunSeeds runs n seeds from first on workers goroutines; each seed is
// one independent world, so the outcome does not depend on the number of
// workers.
func simRunSeeds(first uint64, n, steps, workers int) simResult {
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
				w := simRun(seed, steps, false)
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

// simRun runs one seed to its end or its first failure. steps > 0
// replaces the seed's number of action steps.
func simRun(seed uint64, steps int, keepTrace bool) (w *simWorld) {
	w = newSimWorld(seed, steps)
	w.keepTrace = keepTrace
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
func simReport(w *simWorld, steps int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d failed at step %d (%s): %s\n", w.seed, w.failStep, w.phase, w.failure)
	fmt.Fprintf(&b, "replay: go test ./internal/rdmap -run 'TestSim$' -sim.seed=%d -sim.seeds=1", w.seed)
	if steps > 0 {
		fmt.Fprintf(&b, " -sim.steps=%d", steps)
	}
	b.WriteString(" -sim.trace\n")
	if k, m := simShrink(w); m != nil {
		fmt.Fprintf(&b, "shortest schedule that fails: -sim.seed=%d -sim.seeds=1 -sim.steps=%d (%d action steps instead of %d): %s\n",
			w.seed, k, k, w.cfg.steps, simFirstLine(m.failure))
	}
	fmt.Fprintf(&b, "configuration: %s\n", w.cfg)
	b.WriteString(w.traceText(60))
	return b.String()
}

// simShrink looks for the shortest action phase (the seed's draws are the
// same up to it, then the run settles and closes) that fails with the same
// first line: a bisection, at most a dozen replays.
func simShrink(w *simWorld) (int, *simWorld) {
	want := simFirstLine(w.failure)
	lo, hi := 0, w.cfg.steps
	var best *simWorld
	for i := 0; i < 12 && lo < hi; i++ {
		mid := (lo + hi) / 2
		m := simRun(w.seed, max(mid, 1), false)
		if m.failure != "" && simFirstLine(m.failure) == want {
			hi, best = mid, m
		} else {
			lo = mid + 1
		}
	}
	if best == nil || hi >= w.cfg.steps {
		return 0, nil
	}
	return max(hi, 1), best
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
		a, b := simRun(s, 0, false), simRun(s, 0, false)
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
