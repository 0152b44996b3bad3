package perf

import (
	"context"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/bench"
)

// TestMeasurePairs drives measurePairs with made-up trials: the order
// alternates, both trials of a sameOps pair run as many operations as ours
// took in the trial's duration, a maximum is the largest over the clean pairs and a
// median the median, and only the selected targets are judged.
func TestMeasurePairs(t *testing.T) {
	// Pair 3's raw level is a third of the others': noisy.
	rawRTT := []float64{20, 20, 60}
	oursMax := []float64{500, 1500, 9000} // µs; pair 3's is the largest but noisy
	var calls []string
	var iters []int
	side := func(name string, rtt, maxUS func(pair int) float64) trial {
		return func(_ context.Context, n int) (Result, error) {
			p := len(calls) / 2
			calls, iters = append(calls, name), append(iters, n)
			return Result{Transport: name, Ops: uint64(100 + len(calls)), Lat: &bench.Latency{Median: rtt(p), P99: 2 * rtt(p), Max: maxUS(p)}}, nil
		}
	}
	s := pairSpec{label: "test", sameOps: true, level: levelRTT, show: showRTTMax,
		ours: side("ours", func(int) float64 { return 25 }, func(p int) float64 { return oursMax[p] }),
		raw:  side("raw", func(p int) float64 { return rawRTT[p] }, func(int) float64 { return 100 }),
		metrics: []pairMetric{
			{key: "a", name: "p99", unit: "x", value: p99Ratio, pass: ratioAtMost(2)},
			{key: "a", name: "max", unit: "ms", value: func(o, _ *Result) float64 { return o.Lat.Max / 1e3 }, pass: ratioAtMost(2), worst: true,
				abs: func(r *Result) float64 { return r.Lat.Max / 1e3 }, absFmt: "max %.2f ms"},
			{key: "b", name: "not selected", unit: "x", value: p99Ratio},
		}}
	v := &vsTCP{cfg: &Config{Pairs: 3}, w: io.Discard, run: newRun()}
	out, err := v.measurePairs(context.Background(), &s, func(k string) bool { return k == "a" })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ours", "raw", "raw", "ours", "ours", "raw"}; !slices.Equal(calls, want) {
		t.Errorf("trials ran in the order %q, want %q", calls, want)
	}
	// Both trials of a pair run as many operations as ours took in the
	// trial's duration when it last went first (101 in pair 1, kept for
	// pair 2 where raw goes first; 105 in pair 3).
	if want := []int{0, 101, 101, 101, 0, 105}; !slices.Equal(iters, want) {
		t.Errorf("iterations asked %v, want %v", iters, want)
	}
	if len(out) != 2 || out[0].Name != "p99" || out[1].Name != "max" {
		t.Fatalf("targets %+v, want p99 and max only", out)
	}
	p99, mx := out[0], out[1]
	if p99.Noisy != 1 || p99.Value != 1.25 || p99.Verdict != VerdictPass {
		t.Errorf("p99: %+v, want 1.25 over the 2 clean pairs, PASS", p99)
	}
	if mx.Value != 1.5 || mx.Verdict != VerdictPass || mx.Ours != "max 1.50 ms" || len(mx.Values) != 3 {
		t.Errorf("max: %+v, want the largest clean one, 1.5 ms, PASS", mx)
	}
	if len(v.run.Results) != 6 {
		t.Errorf("%d results kept, want 6", len(v.run.Results))
	}
}

// TestRunVsTCPNewTargets runs the targets of issue 17 on tiny settings
// against a server in this process: each is reported with a verdict,
// the responder-side latency pairs run as many round trips on both sides,
// and rate16 has its Write reference.
func TestRunVsTCPNewTargets(t *testing.T) {
	ep := startServer(t)
	run, names, out := runPairTargets(t, ep, "cpu-crc", "resp-lat", "rate16")
	want := []string{"CPU s/GB, 1 MiB Writes, CRC on",
		"8 B Read after the responder's CQ wait, p99", "8 B Read after the responder's CQ wait, max",
		"FetchAdd after the responder's CQ wait, p99", "FetchAdd after the responder's CQ wait, max",
		"8 B Reads, one QP, 16 in flight", "FetchAdds, one QP, 16 in flight"}
	if !slices.Equal(names, want) {
		t.Errorf("targets %q, want %q", names, want)
	}
	var ours, raw []uint64
	for _, r := range run.Results {
		switch {
		case strings.HasSuffix(r.Op, "-after-cq-wait"):
			ours = append(ours, r.Ops)
			if r.Lat == nil || r.Lat.Max < r.Lat.P99 || r.SeqErrors != 0 {
				t.Errorf("%s: latency %+v", r.Op, r.Lat)
			}
		case r.Op == "pingpong":
			raw = append(raw, r.Ops)
		case r.Op == "pipelined" && (r.Depth != rate16Depth || r.Ops == 0):
			t.Errorf("raw TCP pipelined: depth %d, %d answers", r.Depth, r.Ops)
		}
	}
	if len(ours) != 4 || !slices.Equal(ours, raw) {
		t.Errorf("responder-side round trips: ours %v, raw TCP %v: want as many, pair by pair", ours, raw)
	}
	if len(run.Extra) != 1 || run.Extra[0].Name != "8 B Writes, one QP, 16 in flight" {
		t.Errorf("extra lines %+v, want the 8 B Write reference", run.Extra)
	}
	if !strings.Contains(out, "s/GB") || !strings.Contains(out, "max ") {
		t.Errorf("no CPU or maximum in the targets block:\n%s", out)
	}
}

// TestIdleTarget connects a few idle QPs: the target is judged on both
// processes' memory, and afterwards the server holds none of them and
// this process (both ends here) has its descriptors back.
func TestIdleTarget(t *testing.T) {
	ep := startServer(t)
	// A first QP makes the Devices' pollers (each keeps its epoll
	// descriptor until the Device is closed): count after it.
	warm := &vsTCP{ep: ep, cfg: &Config{IdleQPs: 1}, w: io.Discard, run: newRun()}
	if _, _, err := warm.idleTarget(context.Background()); err != nil {
		t.Fatal(err)
	}
	open0, counted := openFDs()
	v := &vsTCP{ep: ep, cfg: &Config{IdleQPs: 8}, w: io.Discard, run: newRun()}
	tv, extra, err := v.idleTarget(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tv.Name != "memory per idle QP (8 QPs)" || tv.Goal != "<= 32 KiB" || len(tv.Values) != 1 || tv.Note != "" ||
		(tv.Verdict == VerdictPass) != (tv.Value <= idleGoalKiB) {
		t.Errorf("verdict %+v", tv)
	}
	if len(extra) < 2 {
		t.Errorf("extra lines %+v", extra)
	}
	r, err := ep.query(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.idle != 0 {
		t.Errorf("the server still holds %d idle QPs", r.idle)
	}
	// Both ends of the last stat connection may still be closing; 8 idle
	// QPs left open would be 8 or 16 descriptors.
	if open1, _ := openFDs(); counted && open1 > open0+2 {
		t.Errorf("%d file descriptors open before, %d after", open0, open1)
	}
	if runtime.GOOS == "linux" && (r.fds.limit == 0 || r.fds.open == 0) {
		t.Errorf("the server reported its descriptors as %+v", r.fds)
	}
}

// TestFDShortfall: the idle target says what limits it when the QPs would
// not fit.
func TestFDShortfall(t *testing.T) {
	for _, c := range []struct {
		n, k                int
		open0, open1, limit uint64
		want                string
	}{
		{10000, 64, 10, 74, 20000, ""},
		{10000, 64, 10, 74, 0, ""}, // unknown limit
		{10000, 64, 10, 74, 10000, "10000 idle QPs do not fit in the server process: a QP takes 1.0 file descriptors there, 10000 QPs would need 10074 with 64 spare, and it may open 10000"},
		{10000, 64, 10, 138, 20000, "a QP takes 2.0 file descriptors there, 10000 QPs would need 20074"},
		{100, 64, 10, 10, 1000, ""}, // no descriptor counted: one a QP assumed
	} {
		got := fdShortfall("server", c.n, c.k, c.open0, c.open1, c.limit)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("fdShortfall(%d, %d, %d, %d, %d) = %q, want %q", c.n, c.k, c.open0, c.open1, c.limit, got, c.want)
		}
	}
}

// TestTCPPipelined: raw TCP request-response at depth 16 answers exactly
// the requests asked, however the echoes arrive together.
func TestTCPPipelined(t *testing.T) {
	ep := startServer(t)
	r, err := ep.runTCPPipelined(context.Background(), 8, 16, &Config{Iters: 1000, Duration: time.Minute}, &progress{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 1000 || r.MsgRate <= 0 || r.Transport != "tcp" || r.Depth != 16 {
		t.Errorf("%+v: want 1,000 answers", r)
	}
}
