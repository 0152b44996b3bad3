package perf

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/goiwarp/iwarp/internal/bench"
)

// RunVsTCP ("iwarp perf -vs-tcp"): every target of docs/performance.md, each measured
// as interleaved pairs (ours, raw TCP; the order alternates) in the same
// process layout, the ratio computed per pair and the median of the
// ratios reported next to the medians of the absolute values. A pair
// whose raw TCP level is far below that target's usual level (the machine
// was busy) is noisy; a target with too many noisy pairs is reported
// NOISY, not PASS or FAIL.

// noisyBelow: a pair is noisy when its raw TCP level is below this
// fraction of the median raw level of the target.
const noisyBelow = 0.75

// Verdict is one target's outcome.
type Verdict struct {
	Name    string    `json:"name"`
	Goal    string    `json:"goal"`
	Value   float64   `json:"value"` // the median over clean pairs
	Unit    string    `json:"unit"`
	Ours    string    `json:"ours"` // medians of the absolute values
	Raw     string    `json:"raw_tcp,omitempty"`
	Values  []float64 `json:"per_pair"`
	Noisy   int       `json:"noisy_pairs"`
	Verdict string    `json:"verdict"` // VerdictPass, VerdictFail, VerdictNoisy or VerdictInfo
}

// The verdicts of a target.
const (
	VerdictPass  = "PASS"
	VerdictFail  = "FAIL"
	VerdictNoisy = "NOISY" // too many pairs taken on a busy machine to tell
	VerdictInfo  = "INFO"  // reported without a goal
)

// pairMetric is one number computed from a pair, with its goal.
type pairMetric struct {
	name, goal, unit string
	value            func(ours, raw *Result) float64
	pass             func(v float64) bool
}

// pairSpec is a target measured by interleaved pairs.
type pairSpec struct {
	key     string // for -targets
	ours    func(ctx context.Context) (Result, error)
	raw     func(ctx context.Context) (Result, error)
	level   func(raw *Result) float64 // the raw level (higher is better) for noise
	show    func(r *Result) string
	metrics []pairMetric
}

func ratioAtLeast(goal float64) func(float64) bool { return func(v float64) bool { return v >= goal } }
func ratioAtMost(goal float64) func(float64) bool  { return func(v float64) bool { return v <= goal } }

func showMBps(r *Result) string {
	if r.MULPDU > 0 {
		return fmt.Sprintf("%.0f MB/s (MULPDU %d)", r.MBps, r.MULPDU)
	}
	return fmt.Sprintf("%.0f MB/s", r.MBps)
}
func showRate(r *Result) string { return fmt.Sprintf("%.0f msg/s", r.MsgRate) }
func showRTT(r *Result) string {
	return fmt.Sprintf("%.1f/%.1f us", r.Lat.Median, r.Lat.P99)
}

// vsTCP holds what a RunVsTCP needs.
type vsTCP struct {
	ep      *Endpoint
	cfg     *Config
	w       io.Writer
	prog    *progress
	samples []time.Duration
	run     *Run
}

// with returns a copy of the run's configuration for one trial.
func (v *vsTCP) with(crc bool, depth, qps int) *Config {
	c := *v.cfg
	c.Iters, c.Duration, c.CRC, c.Depth, c.QPs = 0, v.cfg.Trial, crc, depth, qps
	return &c
}

func (v *vsTCP) bw(op Op, size, depth, qps int, crc bool) func(context.Context) (Result, error) {
	return func(ctx context.Context) (Result, error) {
		return v.ep.runBW(ctx, op, size, v.with(crc, depth, qps), v.prog)
	}
}

func (v *vsTCP) lat(op Op, size int) func(context.Context) (Result, error) {
	return func(ctx context.Context) (Result, error) {
		return v.ep.runLat(ctx, op, size, v.with(false, 1, 1), v.prog, v.samples)
	}
}

func (v *vsTCP) stream(size int, read bool) func(context.Context) (Result, error) {
	return func(ctx context.Context) (Result, error) {
		return v.ep.runTCPStream(ctx, size, read, v.with(false, 1, 1), v.prog)
	}
}

func (v *vsTCP) pingpong(size int) func(context.Context) (Result, error) {
	return func(ctx context.Context) (Result, error) {
		return v.ep.runTCPPingPong(ctx, size, v.with(false, 1, 1), v.prog, v.samples)
	}
}

func mbpsRatio(o, r *Result) float64   { return o.MBps / r.MBps }
func levelMBps(r *Result) float64      { return r.MBps }
func levelRate(r *Result) float64      { return r.MsgRate }
func levelRTT(r *Result) float64       { return 1 / r.Lat.Median }
func medianRatio(o, r *Result) float64 { return o.Lat.Median / r.Lat.Median }
func p99Ratio(o, r *Result) float64    { return o.Lat.P99 / r.Lat.P99 }

// specs returns the pair targets.
func (v *vsTCP) specs() []pairSpec {
	const mib = 1 << 20
	sendRate := func(name string) pairMetric {
		return pairMetric{name, ">= 1,000,000 msg/s", "msg/s", func(o, _ *Result) float64 { return o.MsgRate }, ratioAtLeast(1e6)}
	}
	rtt := func(what string) []pairMetric {
		return []pairMetric{
			{what + " RTT median", "<= 1.5x raw", "x", medianRatio, ratioAtMost(1.5)},
			{what + " RTT p99", "<= 2x raw p99", "x", p99Ratio, ratioAtMost(2)},
		}
	}
	return []pairSpec{
		{"write", v.bw(Write, mib, 8, 1, false), v.stream(mib, false), levelMBps, showMBps,
			[]pairMetric{{"RDMA Write 1 MiB, CRC off", ">= 0.90x raw", "x", mbpsRatio, ratioAtLeast(0.90)}}},
		{"write-crc", v.bw(Write, mib, 8, 1, true), v.stream(mib, false), levelMBps, showMBps,
			[]pairMetric{{"RDMA Write 1 MiB, CRC on", ">= 0.80x raw", "x", mbpsRatio, ratioAtLeast(0.80)}}},
		{"read", v.bw(Read, mib, 8, 1, false), v.stream(mib, true), levelMBps, showMBps,
			[]pairMetric{{"RDMA Read 1 MiB, CRC off", ">= 0.85x raw", "x", mbpsRatio, ratioAtLeast(0.85)}}},
		{"read-crc", v.bw(Read, mib, 8, 1, true), v.stream(mib, true), levelMBps, showMBps,
			[]pairMetric{{"RDMA Read 1 MiB, CRC on", "(report)", "x", mbpsRatio, nil}}},
		{"send64", v.bw(Send, 64, 512, 1, false), v.stream(64, false), levelRate, showRate,
			[]pairMetric{sendRate("64 B Sends, depth 512, CRC off")}},
		{"send64-crc", v.bw(Send, 64, 512, 1, true), v.stream(64, false), levelRate, showRate,
			[]pairMetric{sendRate("64 B Sends, depth 512, CRC on")}},
		{"write-imm-lat", v.lat(WriteImm, 8), v.pingpong(8), levelRTT, showRTT, rtt("8 B Write-with-Imm ping-pong")},
		{"fetchadd-lat", v.lat(FetchAdd, 8), v.pingpong(8), levelRTT, showRTT, rtt("FetchAdd")},
		{"qps", v.bw(Write, mib, 4, v.cfg.LoadQPs, false), v.bw(Write, mib, 4, 1, false), levelMBps, showMBps,
			[]pairMetric{{fmt.Sprintf("%d QPs writing 1 MiB, total", v.cfg.LoadQPs), ">= 0.80x 1 QP", "x", mbpsRatio, ratioAtLeast(0.80)}}},
	}
}

// RunVsTCP measures every target of cfg.Targets (all by default) against
// ep, printing each pair and then the targets block to w (io.Discard for
// none). Each target gets a verdict: PASS, FAIL, NOISY (too many of its
// pairs were taken while raw TCP ran far below its usual level: a busy
// machine), or INFO (reported without a goal). The Run holds what was
// measured until an error, if any.
func RunVsTCP(ctx context.Context, ep *Endpoint, cfg *Config, w io.Writer) (*Run, error) {
	v := &vsTCP{ep: ep, cfg: cfg, w: w, prog: &progress{w: w, on: cfg.Progress}, samples: make([]time.Duration, maxSamples), run: newRun()}
	if err := cfg.check(true); err != nil {
		return v.run, err
	}
	for _, k := range cfg.Targets {
		if !slices.Contains(TargetKeys, k) {
			return v.run, fmt.Errorf("unknown target %q", k)
		}
	}
	want := func(key string) bool { return len(cfg.Targets) == 0 || slices.Contains(cfg.Targets, key) }
	fmt.Fprintf(v.w, "iwarp perf -vs-tcp: client pid %d, server %s (another process), GOMAXPROCS %d, %d CPUs, %d interleaved pairs of %v trials%s\n",
		os.Getpid(), ep.iwarpAddr, v.run.GOMAXPROCS, v.run.NumCPU, cfg.Pairs, cfg.Trial, bench.LoadNote())
	for _, s := range v.specs() {
		if !want(s.key) {
			continue
		}
		vs, err := v.measurePairs(ctx, &s)
		if err != nil {
			return v.run, fmt.Errorf("%s: %w", s.key, err)
		}
		v.run.Targets = append(v.run.Targets, vs...)
	}
	if want("allocs") {
		t, err := v.allocTarget(ctx)
		if err != nil {
			return v.run, fmt.Errorf("allocs: %w", err)
		}
		v.run.Targets = append(v.run.Targets, t)
	}
	if want("idle") {
		t, extra, err := v.idleTarget(ctx)
		if err != nil {
			return v.run, fmt.Errorf("idle QPs: %w", err)
		}
		v.run.Targets = append(v.run.Targets, t)
		v.run.Extra = append(v.run.Extra, extra...)
	}
	if want("extra") {
		extra, err := v.extras(ctx)
		if err != nil {
			return v.run, fmt.Errorf("extra: %w", err)
		}
		v.run.Extra = append(v.run.Extra, extra...)
	}
	v.printTargets()
	return v.run, nil
}

// measurePairs runs one pair target.
func (v *vsTCP) measurePairs(ctx context.Context, s *pairSpec) ([]Verdict, error) {
	var ours, raws []Result
	for i := range v.cfg.Pairs {
		var o, r Result
		var err error
		if i%2 == 0 {
			if o, err = s.ours(ctx); err == nil {
				r, err = s.raw(ctx)
			}
		} else {
			if r, err = s.raw(ctx); err == nil {
				o, err = s.ours(ctx)
			}
		}
		if err != nil {
			return nil, err
		}
		ours, raws = append(ours, o), append(raws, r)
		v.run.Results = append(v.run.Results, o, r)
		fmt.Fprintf(v.w, "  %-14s pair %d: ours %-20s raw %-20s", s.key, i+1, s.show(&o), s.show(&r))
		for _, m := range s.metrics {
			fmt.Fprintf(v.w, "  %.3g", finite(m.value(&o, &r)))
		}
		fmt.Fprintln(v.w)
	}
	levels := make([]float64, len(raws))
	for i := range raws {
		levels[i] = s.level(&raws[i])
	}
	usual := bench.Median(slices.Clone(levels))
	var out []Verdict
	for _, m := range s.metrics {
		t := Verdict{Name: m.name, Goal: m.goal, Unit: m.unit}
		var clean []float64
		for i := range ours {
			x := finite(m.value(&ours[i], &raws[i]))
			t.Values = append(t.Values, x)
			if levels[i] < noisyBelow*usual {
				t.Noisy++
				continue
			}
			clean = append(clean, x)
		}
		if len(clean) > 0 {
			t.Value = bench.Median(clean)
		}
		t.Ours, t.Raw = medianShow(ours, s.show), medianShow(raws, s.show)
		switch {
		case m.pass == nil:
			t.Verdict = VerdictInfo
		case len(clean) < (len(ours)+1)/2:
			t.Verdict = VerdictNoisy
		case m.pass(t.Value):
			t.Verdict = VerdictPass
		default:
			t.Verdict = VerdictFail
		}
		out = append(out, t)
	}
	return out, nil
}

// medianShow shows the result with the median level of rs.
func medianShow(rs []Result, show func(*Result) string) string {
	if len(rs) == 0 {
		return ""
	}
	c := slices.Clone(rs)
	slices.SortFunc(c, func(a, b Result) int {
		ka, kb := a.MBps+a.MsgRate, b.MBps+b.MsgRate
		if a.Lat != nil {
			ka, kb = a.Lat.Median, b.Lat.Median
		}
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return show(&c[len(c)/2])
}

// printTargets prints the targets block.
func (v *vsTCP) printTargets() {
	w := v.w
	fmt.Fprintln(w, rule)
	fmt.Fprintf(w, "targets (medians; ratio = median of per-pair ratios over clean pairs)%s\n", bench.LoadNote())
	fmt.Fprintln(w, rule)
	fmt.Fprintf(w, "%-44s  %-20s  %-26s  %-26s  %-12s  %-6s  %s\n", "target", "goal", "ours", "raw TCP / reference", "measured", "noisy", "verdict")
	for _, t := range v.run.Targets {
		val := fmt.Sprintf("%.3fx", t.Value)
		switch t.Unit {
		case "msg/s":
			val = fmt.Sprintf("%.0f/s", t.Value)
		case "KiB/QP":
			val = fmt.Sprintf("%.1f KiB", t.Value)
		case "allocs/op":
			val = fmt.Sprintf("%.4f", t.Value)
		}
		fmt.Fprintf(w, "%-44s  %-20s  %-26s  %-26s  %-12s  %-6s  %s\n", t.Name, t.Goal, t.Ours, t.Raw, val, fmt.Sprintf("%d/%d", t.Noisy, len(t.Values)), t.Verdict)
	}
	if len(v.run.Extra) > 0 {
		fmt.Fprintln(w, rule)
		fmt.Fprintln(w, "also measured")
		fmt.Fprintln(w, rule)
		for _, e := range v.run.Extra {
			fmt.Fprintf(w, "%-46s  %s\n", e.Name, e.Value)
		}
	}
}

// finite returns x, or 0 for NaN and infinities (which JSON cannot carry).
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
