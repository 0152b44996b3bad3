package rdmap

import (
	"fmt"
	"strings"
	"testing"
)

// TestSimHostileCases runs each hostile input of the conform suite in
// runs made for it (seeds until it was sent three times, once under the
// race detector), so that every case is answered as prescribed whatever
// the random draw of TestSim happens to pick.
func TestSimHostileCases(t *testing.T) {
	want := 3
	if simRace || testing.Short() {
		want = 1
	}
	for _, k := range simCases {
		t.Run(k.name, func(t *testing.T) {
			sent := 0
			for seed := uint64(1); seed <= 300 && sent < want; seed++ {
				w := simRun(simOpts{seed: seed, force: k})
				if w.failure != "" {
					t.Fatal(simReport(w))
				}
				if w.hostileDone {
					sent++
				}
			}
			if sent == 0 {
				t.Fatal("never sent: no run reached a message boundary with the victim still up")
			}
		})
	}
}

// TestSimReportReplays checks the harness itself: a run that breaks an
// invariant (here a canary overwritten at a chosen step, -sim.corrupt)
// fails at that step, its report names the flags that replay it, and the
// replay with them takes the same path bit for bit.
func TestSimReportReplays(t *testing.T) {
	for _, seed := range []uint64{3, 1234} {
		o := simOpts{seed: seed, corrupt: 40}
		w := simRun(o)
		if w.failure == "" || w.failStep != 40 || !strings.Contains(w.failure, "canary") {
			t.Fatalf("seed %d with a canary overwritten at step 40: failure %q at step %d", seed, w.failure, w.failStep)
		}
		report := simReport(w)
		flags := fmt.Sprintf("-sim.seed=%d -sim.seeds=1 -sim.corrupt=40", seed)
		if !strings.Contains(report, "replay: go test ./internal/rdmap -run 'TestSim$' "+flags) {
			t.Fatalf("the report does not give the replay flags %q:\n%s", flags, report)
		}
		r := simRun(o)
		if r.hash != w.hash || r.failure != w.failure || r.failStep != w.failStep {
			t.Fatalf("seed %d replays differently: hash %#x then %#x, %q at %d then %q at %d",
				seed, w.hash, r.hash, w.failure, w.failStep, r.failure, r.failStep)
		}
	}
}
