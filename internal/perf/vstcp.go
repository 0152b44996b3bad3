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
	Value   float64   `json:"value"` // the median over clean pairs (a maximum: the largest)
	Unit    string    `json:"unit"`
	Ours    string    `json:"ours"` // medians of the absolute values
	Raw     string    `json:"raw_tcp,omitempty"`
	Values  []float64 `json:"per_pair"`
	Noisy   int       `json:"noisy_pairs"`
	Verdict string    `json:"verdict"`        // VerdictPass, VerdictFail, VerdictNoisy or VerdictInfo
	Note    string    `json:"note,omitempty"` // why a target could not be measured as asked
}

// The verdicts of a target.
const (
	VerdictPass  = "PASS"
	VerdictFail  = "FAIL"
	VerdictNoisy = "NOISY" // too many pairs taken on a busy machine to tell
	VerdictInfo  = "INFO"  // reported without a goal
)

// trial runs one side of a pair: for the run's trial duration, or, when
// iters > 0, for that many operations (per QP).
type trial func(ctx context.Context, iters int) (Result, error)

// pairMetric is one number computed from a pair, with its goal.
type pairMetric struct {
	key              string // for -targets
	name, goal, unit string
	value            func(ours, raw *Result) float64
	pass             func(v float64) bool // nil: reported without a goal
	// worst: the measured value is the largest over the clean pairs (a
	// maximum), not their median.
	worst bool
	// abs, when set, is the absolute value shown, with absFmt, in the
	// ours and raw columns, taken over the pairs as the measured value
	// is; without it those columns show the spec's show of the median
	// result.
	abs    func(r *Result) float64
	absFmt string
}

// pairSpec is one or more targets measured on the same interleaved pairs.
type pairSpec struct {
	label string // names the pairs in the output
	ours  trial
	raw   trial
	// sameOps: both trials of a pair run as many operations, so that both
	// sides' p99 and maximum come from as many samples: as many as ours
	// took in the trial's duration, in this pair when ours goes first, in
	// the previous one when raw TCP does (ours is the slower here, so no
	// trial runs much longer than the duration).
	sameOps bool
	level   func(raw *Result) float64 // the raw level (higher is better) for noise
	show    func(r *Result) string
	metrics []pairMetric
}

// wanted reports whether any of the spec's targets is selected.
func (s *pairSpec) wanted(want func(key string) bool) bool {
	return slices.ContainsFunc(s.metrics, func(m pairMetric) bool { return want(m.key) })
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
	return fmt.Sprintf("median %.1f, p99 %.1f us", r.Lat.Median, r.Lat.P99)
}
func showRTTMax(r *Result) string {
	return fmt.Sprintf("median %.1f, p99 %.1f, max %.0f us", r.Lat.Median, r.Lat.P99, r.Lat.Max)
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

// with returns a copy of the run's configuration for one trial: iters
// operations (per QP), or 0 for the trial's duration.
func (v *vsTCP) with(crc bool, depth, qps, iters int) *Config {
	c := *v.cfg
	c.Iters, c.Duration, c.CRC, c.Depth, c.QPs = iters, v.cfg.Trial, crc, depth, qps
	return &c
}

func (v *vsTCP) bw(op Op, size, depth, qps int, crc bool) trial {
	return func(ctx context.Context, iters int) (Result, error) {
		return v.ep.runBW(ctx, op, size, v.with(crc, depth, qps, iters), v.prog)
	}
}

// bwSlots is bw on one QP that cycles through slots buffers of size on
// each side (Config.Slots).
func (v *vsTCP) bwSlots(op Op, size, depth, slots int, crc bool) trial {
	return func(ctx context.Context, iters int) (Result, error) {
		cfg := v.with(crc, depth, 1, iters)
		cfg.Slots = slots
		return v.ep.runBW(ctx, op, size, cfg, v.prog)
	}
}

func (v *vsTCP) lat(op Op, size int) trial {
	return func(ctx context.Context, iters int) (Result, error) {
		return v.ep.runLat(ctx, op, size, v.with(false, 1, 1, iters), v.prog, v.samples)
	}
}

// respLat is the responder-side latency of op (resplat.go).
func (v *vsTCP) respLat(op Op) trial {
	return func(ctx context.Context, iters int) (Result, error) {
		return v.ep.runRespLat(ctx, op, v.with(false, 1, 1, iters), v.prog, v.samples)
	}
}

func (v *vsTCP) stream(size int, read bool) trial {
	return func(ctx context.Context, iters int) (Result, error) {
		return v.ep.runTCPStream(ctx, size, read, v.with(false, 1, 1, iters), v.prog)
	}
}

func (v *vsTCP) pingpong(size int) trial {
	return func(ctx context.Context, iters int) (Result, error) {
		return v.ep.runTCPPingPong(ctx, size, v.with(false, 1, 1, iters), v.prog, v.samples)
	}
}

// pipelined is raw TCP request-response with depth requests outstanding.
func (v *vsTCP) pipelined(size, depth int) trial {
	return func(ctx context.Context, iters int) (Result, error) {
		return v.ep.runTCPPipelined(ctx, size, depth, v.with(false, depth, 1, iters), v.prog)
	}
}

func mbpsRatio(o, r *Result) float64   { return o.MBps / r.MBps }
func cpuRatio(o, r *Result) float64    { return o.CPUSecPerGB / r.CPUSecPerGB }
func levelMBps(r *Result) float64      { return r.MBps }
func levelRate(r *Result) float64      { return r.MsgRate }
func levelRTT(r *Result) float64       { return 1 / r.Lat.Median }
func medianRatio(o, r *Result) float64 { return o.Lat.Median / r.Lat.Median }
func p99Ratio(o, r *Result) float64    { return o.Lat.P99 / r.Lat.P99 }

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
		if !s.wanted(want) {
			continue
		}
		vs, err := v.measurePairs(ctx, &s, want)
		if err != nil {
			return v.run, fmt.Errorf("%s: %w", s.label, err)
		}
		v.run.Targets = append(v.run.Targets, vs...)
	}
	if want("rate16") {
		e, err := v.rateReference(ctx)
		if err != nil {
			return v.run, fmt.Errorf("rate16 write: %w", err)
		}
		v.run.Extra = append(v.run.Extra, e)
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

// measurePairs runs the pairs of one spec and judges its selected targets.
func (v *vsTCP) measurePairs(ctx context.Context, s *pairSpec, want func(string) bool) ([]Verdict, error) {
	var ours, raws []Result
	n := 0 // with sameOps, the operations ours took when it last went first
	for i := range v.cfg.Pairs {
		first, second := s.ours, s.raw
		firstIters := 0
		if i%2 == 1 {
			first, second = s.raw, s.ours
			if s.sameOps {
				firstIters = n
			}
		}
		a, err := first(ctx, firstIters)
		if err != nil {
			return nil, err
		}
		if s.sameOps && i%2 == 0 {
			n = int(a.Ops)
		}
		secondIters := 0
		if s.sameOps {
			secondIters = n
		}
		b, err := second(ctx, secondIters)
		if err != nil {
			return nil, err
		}
		o, r := a, b
		if i%2 == 1 {
			o, r = b, a
		}
		ours, raws = append(ours, o), append(raws, r)
		v.run.Results = append(v.run.Results, o, r)
		fmt.Fprintf(v.w, "  %-18s pair %d: ours %-26s raw %-26s", s.label, i+1, s.show(&o), s.show(&r))
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
	clean := func(i int) bool { return levels[i] >= noisyBelow*usual }
	var out []Verdict
	for _, m := range s.metrics {
		if !want(m.key) {
			continue
		}
		t := Verdict{Name: m.name, Goal: m.goal, Unit: m.unit}
		var vals []float64
		for i := range ours {
			x := finite(m.value(&ours[i], &raws[i]))
			t.Values = append(t.Values, x)
			if !clean(i) {
				t.Noisy++
				continue
			}
			vals = append(vals, x)
		}
		t.Value = aggregate(vals, m.worst)
		if m.abs == nil {
			t.Ours, t.Raw = medianShow(ours, s.show), medianShow(raws, s.show)
		} else {
			t.Ours, t.Raw = m.showAbs(ours, clean), m.showAbs(raws, clean)
		}
		switch {
		case m.pass == nil:
			t.Verdict = VerdictInfo
		case len(vals) < (len(ours)+1)/2:
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

// aggregate is the median of xs, or with worst their largest (0 for none).
func aggregate(xs []float64, worst bool) float64 {
	switch {
	case len(xs) == 0:
		return 0
	case worst:
		return slices.Max(xs)
	}
	return bench.Median(slices.Clone(xs))
}

// showAbs shows m's absolute value over rs: the median of all of them, or
// for a maximum the largest of the clean ones.
func (m *pairMetric) showAbs(rs []Result, clean func(int) bool) string {
	var xs []float64
	for i := range rs {
		if !m.worst || clean(i) {
			xs = append(xs, finite(m.abs(&rs[i])))
		}
	}
	return fmt.Sprintf(m.absFmt, aggregate(xs, m.worst))
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
		case "ms":
			val = fmt.Sprintf("%.2f ms", t.Value)
		}
		if len(t.Values) == 0 {
			val = "-" // not measured: the note says why
		}
		fmt.Fprintf(w, "%-44s  %-20s  %-26s  %-26s  %-12s  %-6s  %s\n", t.Name, t.Goal, t.Ours, t.Raw, val, fmt.Sprintf("%d/%d", t.Noisy, len(t.Values)), t.Verdict)
		if t.Note != "" {
			fmt.Fprintf(w, "    %s\n", t.Note)
		}
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
