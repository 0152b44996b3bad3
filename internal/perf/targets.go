package perf

import (
	"context"
	"fmt"
)

// The pair targets of docs/performance.md. Each spec is one kind of pair
// (ours, raw TCP); its metrics are the targets judged on those pairs, each
// selected by its key.

// rate16Depth is the work requests in flight of the rate16 targets.
const rate16Depth = 16

// specs returns the pair targets, in the order they run.
func (v *vsTCP) specs() []pairSpec {
	const mib = 1 << 20
	cpu := func(key, name string, goal float64) pairMetric {
		return pairMetric{key: key, name: name, goal: fmt.Sprintf("<= %.2fx raw", goal), unit: "x", value: cpuRatio, pass: ratioAtMost(goal),
			abs: func(r *Result) float64 { return r.CPUSecPerGB }, absFmt: "%.3f s/GB"}
	}
	write := func(key, cpuKey, crcName string, crc bool, goal, cpuGoal float64) pairSpec {
		return pairSpec{label: key, ours: v.bw(Write, mib, 8, 1, crc), raw: v.stream(mib, false), level: levelMBps, show: showMBps, metrics: []pairMetric{
			{key: key, name: "RDMA Write 1 MiB, " + crcName, goal: fmt.Sprintf(">= %.2fx raw", goal), unit: "x", value: mbpsRatio, pass: ratioAtLeast(goal)},
			cpu(cpuKey, "CPU s/GB, 1 MiB Writes, "+crcName, cpuGoal),
		}}
	}
	read := func(key, crcName string, crc bool, pass func(float64) bool, goal string) pairSpec {
		return pairSpec{label: key, ours: v.bw(Read, mib, 8, 1, crc), raw: v.stream(mib, true), level: levelMBps, show: showMBps,
			metrics: []pairMetric{{key: key, name: "RDMA Read 1 MiB, " + crcName, goal: goal, unit: "x", value: mbpsRatio, pass: pass}}}
	}
	rate := func(key, label, name string, ours, raw trial, goal float64) pairSpec {
		return pairSpec{label: label, ours: ours, raw: raw, level: levelRate, show: showRate,
			metrics: []pairMetric{{key: key, name: name, goal: fmt.Sprintf(">= %s msg/s", thousands(goal)), unit: "msg/s",
				value: func(o, _ *Result) float64 { return o.MsgRate }, pass: ratioAtLeast(goal)}}}
	}
	// The rate16 targets' raw TCP: 8-byte requests echoed by the server,
	// as many outstanding.
	rawRate16 := v.pipelined(8, rate16Depth)
	rtt := func(key, what string, op Op) pairSpec {
		return pairSpec{label: key, ours: v.lat(op, 8), raw: v.pingpong(8), level: levelRTT, show: showRTT, metrics: []pairMetric{
			{key: key, name: what + " RTT median", goal: "<= 1.5x raw", unit: "x", value: medianRatio, pass: ratioAtMost(1.5)},
			{key: key, name: what + " RTT p99", goal: "<= 2x raw p99", unit: "x", value: p99Ratio, pass: ratioAtMost(2)},
		}}
	}
	// respLat: an 8-byte operation right after the responder's application
	// returned from its CQ wait (resplat.go), against raw TCP's 8-byte
	// ping-pong with as many round trips.
	respLat := func(what string, op Op) pairSpec {
		name := what + " after the responder's CQ wait, "
		return pairSpec{label: "resp-lat " + op.String(), ours: v.respLat(op), raw: v.pingpong(8), sameOps: true, level: levelRTT, show: showRTTMax, metrics: []pairMetric{
			{key: "resp-lat", name: name + "p99", goal: "<= 2x raw p99", unit: "x", value: p99Ratio, pass: ratioAtMost(2),
				abs: func(r *Result) float64 { return r.Lat.P99 }, absFmt: "p99 %.1f us"},
			{key: "resp-lat", name: name + "max", goal: "<= 2 ms", unit: "ms", value: func(o, _ *Result) float64 { return o.Lat.Max / 1e3 }, pass: ratioAtMost(2), worst: true,
				abs: func(r *Result) float64 { return r.Lat.Max / 1e3 }, absFmt: "max %.2f ms"},
		}}
	}
	return []pairSpec{
		write("write", "cpu", "CRC off", false, 0.90, 1.10),
		write("write-crc", "cpu-crc", "CRC on", true, 0.80, 1.20),
		read("read", "CRC off", false, ratioAtLeast(0.85), ">= 0.85x raw"),
		read("read-crc", "CRC on", true, nil, "(report)"),
		rate("send64", "send64", "64 B Sends, depth 512, CRC off", v.bw(Send, 64, 512, 1, false), v.stream(64, false), 1e6),
		rate("send64-crc", "send64-crc", "64 B Sends, depth 512, CRC on", v.bw(Send, 64, 512, 1, true), v.stream(64, false), 1e6),
		rtt("write-imm-lat", "8 B Write-with-Imm ping-pong", WriteImm),
		rtt("fetchadd-lat", "FetchAdd", FetchAdd),
		respLat("8 B Read", Read),
		respLat("FetchAdd", FetchAdd),
		rate("rate16", "rate16 read", "8 B Reads, one QP, 16 in flight", v.bw(Read, 8, rate16Depth, 1, false), rawRate16, 5e5),
		rate("rate16", "rate16 fetchadd", "FetchAdds, one QP, 16 in flight", v.bw(FetchAdd, 8, rate16Depth, 1, false), rawRate16, 5e5),
		// The reference QP cycles through as many 1 MiB buffers on each
		// side as the loaded QPs have together (one each), so that both
		// move their bytes through the same amount of memory: a single
		// 1 MiB buffer stays in the caches, LoadQPs of them do not.
		{label: "qps", ours: v.bw(Write, mib, 4, v.cfg.LoadQPs, false), raw: v.bwSlots(Write, mib, 4, v.cfg.LoadQPs, false), level: levelMBps, show: showMBps,
			metrics: []pairMetric{{key: "qps", name: fmt.Sprintf("%d QPs writing 1 MiB, total", v.cfg.LoadQPs), goal: ">= 0.90x 1 QP", unit: "x", value: mbpsRatio, pass: ratioAtLeast(0.90)}}},
	}
}

// rateReference measures 8-byte Writes at the rate16 targets' depth, one
// trial, for reference: a one-way operation where the targets' are
// request-response.
func (v *vsTCP) rateReference(ctx context.Context) (Extra, error) {
	r, err := v.bw(Write, 8, rate16Depth, 1, false)(ctx, 0)
	if err != nil {
		return Extra{}, err
	}
	v.run.Results = append(v.run.Results, r)
	e := Extra{fmt.Sprintf("8 B Writes, one QP, %d in flight", rate16Depth), fmt.Sprintf("%.0f msg/s (one trial; reference for rate16)", r.MsgRate)}
	fmt.Fprintf(v.w, "  %-18s %s: %s\n", "rate16 write", e.Name, e.Value)
	return e, nil
}

// thousands writes a whole number with thousands separators.
func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
