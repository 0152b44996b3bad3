package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// "iwarp perf -vs-tcp": every target of docs/performance.md, each measured
// as interleaved pairs (ours, raw TCP; the order alternates) in the same
// process layout, the ratio computed per pair and the median of the
// ratios reported next to the medians of the absolute values. A pair
// whose raw TCP level is far below that target's usual level (the machine
// was busy) is noisy; a target with too many noisy pairs is reported
// NOISY, not PASS or FAIL.

// noisyBelow: a pair is noisy when its raw TCP level is below this
// fraction of the median raw level of the target.
const noisyBelow = 0.75

// targetVerdict is one target's outcome.
type targetVerdict struct {
	Name    string    `json:"name"`
	Goal    string    `json:"goal"`
	Value   float64   `json:"value"` // the median over clean pairs
	Unit    string    `json:"unit"`
	Ours    string    `json:"ours"` // medians of the absolute values
	Raw     string    `json:"raw_tcp,omitempty"`
	Values  []float64 `json:"per_pair"`
	Noisy   int       `json:"noisy_pairs"`
	Verdict string    `json:"verdict"` // PASS, FAIL or NOISY
}

// pairMetric is one number computed from a pair, with its goal.
type pairMetric struct {
	name, goal, unit string
	value            func(ours, raw *perfResult) float64
	pass             func(v float64) bool
}

// pairSpec is a target measured by interleaved pairs.
type pairSpec struct {
	key     string // for -targets
	ours    func(ctx context.Context) (perfResult, error)
	raw     func(ctx context.Context) (perfResult, error)
	level   func(raw *perfResult) float64 // the raw level (higher is better) for noise
	show    func(r *perfResult) string
	metrics []pairMetric
}

func ratioAtLeast(goal float64) func(float64) bool { return func(v float64) bool { return v >= goal } }
func ratioAtMost(goal float64) func(float64) bool  { return func(v float64) bool { return v <= goal } }

func showMBps(r *perfResult) string {
	if r.MULPDU > 0 {
		return fmt.Sprintf("%.0f MB/s (MULPDU %d)", r.MBps, r.MULPDU)
	}
	return fmt.Sprintf("%.0f MB/s", r.MBps)
}
func showRate(r *perfResult) string { return fmt.Sprintf("%.0f msg/s", r.MsgRate) }
func showRTT(r *perfResult) string {
	return fmt.Sprintf("%.1f/%.1f us", r.Lat.Median, r.Lat.P99)
}

// vsTCP holds what a --vs-tcp run needs.
type vsTCP struct {
	ep      *perfEndpoint
	cfg     *perfConfig
	w       io.Writer
	prog    *progress
	samples []time.Duration
	run     *perfRun
}

// with returns a copy of the run's configuration for one trial.
func (v *vsTCP) with(crc bool, depth, qps int) *perfConfig {
	c := *v.cfg
	c.iters, c.duration, c.crc, c.depth, c.qps = 0, v.cfg.trial, crc, depth, qps
	return &c
}

func (v *vsTCP) bw(op perfOp, size, depth, qps int, crc bool) func(context.Context) (perfResult, error) {
	return func(ctx context.Context) (perfResult, error) {
		return v.ep.runBW(ctx, op, size, v.with(crc, depth, qps), v.prog)
	}
}

func (v *vsTCP) lat(op perfOp, size int) func(context.Context) (perfResult, error) {
	return func(ctx context.Context) (perfResult, error) {
		return v.ep.runLat(ctx, op, size, v.with(false, 1, 1), v.prog, v.samples)
	}
}

func (v *vsTCP) stream(size int, read bool) func(context.Context) (perfResult, error) {
	return func(ctx context.Context) (perfResult, error) {
		return v.ep.runTCPStream(ctx, size, read, v.with(false, 1, 1), v.prog)
	}
}

func (v *vsTCP) pingpong(size int) func(context.Context) (perfResult, error) {
	return func(ctx context.Context) (perfResult, error) {
		return v.ep.runTCPPingPong(ctx, size, v.with(false, 1, 1), v.prog, v.samples)
	}
}

func mbpsRatio(o, r *perfResult) float64   { return o.MBps / r.MBps }
func levelMBps(r *perfResult) float64      { return r.MBps }
func levelRate(r *perfResult) float64      { return r.MsgRate }
func levelRTT(r *perfResult) float64       { return 1 / r.Lat.Median }
func medianRatio(o, r *perfResult) float64 { return o.Lat.Median / r.Lat.Median }
func p99Ratio(o, r *perfResult) float64    { return o.Lat.P99 / r.Lat.P99 }

// specs returns the pair targets.
func (v *vsTCP) specs() []pairSpec {
	const mib = 1 << 20
	sendRate := func(name string) pairMetric {
		return pairMetric{name, ">= 1,000,000 msg/s", "msg/s", func(o, _ *perfResult) float64 { return o.MsgRate }, ratioAtLeast(1e6)}
	}
	rtt := func(what string) []pairMetric {
		return []pairMetric{
			{what + " RTT median", "<= 1.5x raw", "x", medianRatio, ratioAtMost(1.5)},
			{what + " RTT p99", "<= 2x raw p99", "x", p99Ratio, ratioAtMost(2)},
		}
	}
	return []pairSpec{
		{"write", v.bw(perfWrite, mib, 8, 1, false), v.stream(mib, false), levelMBps, showMBps,
			[]pairMetric{{"RDMA Write 1 MiB, CRC off", ">= 0.90x raw", "x", mbpsRatio, ratioAtLeast(0.90)}}},
		{"write-crc", v.bw(perfWrite, mib, 8, 1, true), v.stream(mib, false), levelMBps, showMBps,
			[]pairMetric{{"RDMA Write 1 MiB, CRC on", ">= 0.80x raw", "x", mbpsRatio, ratioAtLeast(0.80)}}},
		{"read", v.bw(perfRead, mib, 8, 1, false), v.stream(mib, true), levelMBps, showMBps,
			[]pairMetric{{"RDMA Read 1 MiB, CRC off", ">= 0.85x raw", "x", mbpsRatio, ratioAtLeast(0.85)}}},
		{"read-crc", v.bw(perfRead, mib, 8, 1, true), v.stream(mib, true), levelMBps, showMBps,
			[]pairMetric{{"RDMA Read 1 MiB, CRC on", "(report)", "x", mbpsRatio, nil}}},
		{"send64", v.bw(perfSend, 64, 512, 1, false), v.stream(64, false), levelRate, showRate,
			[]pairMetric{sendRate("64 B Sends, depth 512, CRC off")}},
		{"send64-crc", v.bw(perfSend, 64, 512, 1, true), v.stream(64, false), levelRate, showRate,
			[]pairMetric{sendRate("64 B Sends, depth 512, CRC on")}},
		{"write-imm-lat", v.lat(perfWriteImm, 8), v.pingpong(8), levelRTT, showRTT, rtt("8 B Write-with-Imm ping-pong")},
		{"fetchadd-lat", v.lat(perfFetchAdd, 8), v.pingpong(8), levelRTT, showRTT, rtt("FetchAdd")},
		{"qps", v.bw(perfWrite, mib, 4, v.cfg.loadQPs, false), v.bw(perfWrite, mib, 4, 1, false), levelMBps, showMBps,
			[]pairMetric{{fmt.Sprintf("%d QPs writing 1 MiB, total", v.cfg.loadQPs), ">= 0.80x 1 QP", "x", mbpsRatio, ratioAtLeast(0.80)}}},
	}
}

// runVsTCP is "iwarp perf -vs-tcp".
func runVsTCP(ctx context.Context, ep *perfEndpoint, cfg *perfConfig, stdout io.Writer) error {
	v := &vsTCP{ep: ep, cfg: cfg, w: stdout, prog: &progress{w: stdout, on: cfg.progress}, samples: make([]time.Duration, perfMaxSamples), run: newPerfRun()}
	if cfg.json {
		v.w = io.Discard
	}
	want := func(key string) bool {
		return cfg.targets == "" || slices.Contains(strings.Split(cfg.targets, ","), key)
	}
	if cfg.targets != "" {
		known := []string{"allocs", "idle", "extra"}
		for _, s := range v.specs() {
			known = append(known, s.key)
		}
		for _, k := range strings.Split(cfg.targets, ",") {
			if !slices.Contains(known, k) {
				return fmt.Errorf("unknown target %q (have %s)", k, strings.Join(known, ", "))
			}
		}
	}
	fmt.Fprintf(v.w, "iwarp perf -vs-tcp: client pid %d, server %s (another process), GOMAXPROCS %d, %d CPUs, %d interleaved pairs of %v trials%s\n",
		os.Getpid(), ep.iwarpAddr, v.run.GOMAXPROCS, v.run.NumCPU, cfg.pairs, cfg.trial, loadAverage())
	for _, s := range v.specs() {
		if !want(s.key) {
			continue
		}
		vs, err := v.measurePairs(ctx, &s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.key, err)
		}
		v.run.Targets = append(v.run.Targets, vs...)
	}
	if want("allocs") {
		t, err := v.allocTarget(ctx)
		if err != nil {
			return fmt.Errorf("allocs: %w", err)
		}
		v.run.Targets = append(v.run.Targets, t)
	}
	if want("idle") {
		t, extra, err := v.idleTarget(ctx)
		if err != nil {
			return fmt.Errorf("idle QPs: %w", err)
		}
		v.run.Targets = append(v.run.Targets, t)
		v.run.Extra = append(v.run.Extra, extra...)
	}
	if want("extra") {
		extra, err := v.extras(ctx)
		if err != nil {
			return fmt.Errorf("extra: %w", err)
		}
		v.run.Extra = append(v.run.Extra, extra...)
	}
	v.printTargets()
	return v.run.finish(cfg, stdout)
}

// measurePairs runs one pair target.
func (v *vsTCP) measurePairs(ctx context.Context, s *pairSpec) ([]targetVerdict, error) {
	var ours, raws []perfResult
	for i := range v.cfg.pairs {
		var o, r perfResult
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
	usual := median(slices.Clone(levels))
	var out []targetVerdict
	for _, m := range s.metrics {
		t := targetVerdict{Name: m.name, Goal: m.goal, Unit: m.unit}
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
			t.Value = median(clean)
		}
		t.Ours, t.Raw = medianShow(ours, s.show), medianShow(raws, s.show)
		switch {
		case m.pass == nil:
			t.Verdict = "INFO"
		case len(clean) < (len(ours)+1)/2:
			t.Verdict = "NOISY"
		case m.pass(t.Value):
			t.Verdict = "PASS"
		default:
			t.Verdict = "FAIL"
		}
		out = append(out, t)
	}
	return out, nil
}

// medianShow shows the result with the median level of rs.
func medianShow(rs []perfResult, show func(*perfResult) string) string {
	if len(rs) == 0 {
		return ""
	}
	c := slices.Clone(rs)
	slices.SortFunc(c, func(a, b perfResult) int {
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
	fmt.Fprintln(w, perfRule)
	fmt.Fprintf(w, "targets (medians; ratio = median of per-pair ratios over clean pairs)%s\n", loadAverage())
	fmt.Fprintln(w, perfRule)
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
		fmt.Fprintln(w, perfRule)
		fmt.Fprintln(w, "also measured")
		fmt.Fprintln(w, perfRule)
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
