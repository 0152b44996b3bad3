package perf

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/goiwarp/iwarp/internal/bench"
)

// Extra is a measurement reported without a target.
type Extra struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// allocTarget runs every operation, bandwidth and latency, briefly and
// reports the most heap allocations per operation seen in either process.
func (v *vsTCP) allocTarget(ctx context.Context) (Verdict, error) {
	t := Verdict{Name: "allocations per operation, every operation", Goal: "0 (< 0.01 measured)", Unit: "allocs/op"}
	ops, _ := ParseOps("all")
	worst := ""
	cfg := v.with(false, 32, 1, 0)
	cfg.Duration = max(v.cfg.Trial/4, time.Millisecond)
	for _, op := range ops {
		for _, mode := range []string{"bw", "lat"} {
			// The server counts allocations process-wide: let the previous
			// test's connection finish tearing down first.
			time.Sleep(100 * time.Millisecond)
			var r Result
			var err error
			if mode == "bw" {
				r, err = v.ep.runBW(ctx, op, 4096, cfg, v.prog)
			} else {
				r, err = v.ep.runLat(ctx, op, 4096, cfg, v.prog, v.samples)
			}
			if err != nil {
				return t, fmt.Errorf("%v %s: %w", op, mode, err)
			}
			v.run.Results = append(v.run.Results, r)
			a := max(r.ClientAllocsPerOp, r.ServerAllocsPerOp)
			t.Values = append(t.Values, a)
			fmt.Fprintf(v.w, "  %-14s %-9s %-3s client %.4f server %.4f allocs/op (%d ops)\n", "allocs", op, mode, r.ClientAllocsPerOp, r.ServerAllocsPerOp, r.Ops)
			if a >= t.Value {
				t.Value, worst = a, fmt.Sprintf("worst: %v %s", op, mode)
			}
		}
	}
	t.Ours = worst
	t.Verdict = VerdictPass
	if t.Value >= 0.01 {
		t.Verdict = VerdictFail
	}
	return t, nil
}

// extras reports CPU per GB from the pairs already run, and latency under
// load.
func (v *vsTCP) extras(ctx context.Context) ([]Extra, error) {
	var out []Extra
	// cpu returns the CPU seconds per GB of both processes, the client's
	// and the server's, and the throughput, of every matching result. The
	// throughput is printed with them because a process's CPU per GB
	// depends on it: a receiver that keeps up reads less per call, and
	// wakes more often, when less arrives (docs/performance.md, "CRC on").
	cpu := func(op, transport string, crc bool) (both, client, server, mbps []float64) {
		for _, r := range v.run.Results {
			if r.Op == op && r.Transport == transport && r.Size == 1<<20 && r.Mode == "bw" && r.QPs == 1 && (transport == "tcp" || (r.CRC == crc && r.Depth == 8)) {
				c := r.ClientCPU / (float64(r.Ops) * float64(r.Size) / 1e9)
				both = append(both, r.CPUSecPerGB)
				client, server = append(client, c), append(server, r.CPUSecPerGB-c)
				mbps = append(mbps, r.MBps)
			}
		}
		return both, client, server, mbps
	}
	for _, c := range []struct {
		name, op, tcpOp string
		crc             bool
	}{{"write 1 MiB, CRC off", "write", "stream", false}, {"write 1 MiB, CRC on", "write", "stream", true}, {"read 1 MiB, CRC off", "read", "stream-read", false}} {
		o, oc, osv, om := cpu(c.op, "iwarp", c.crc)
		r, rc, rs, rm := cpu(c.tcpOp, "tcp", false)
		if len(o) == 0 || len(r) == 0 {
			continue
		}
		mo, mr := bench.Median(o), bench.Median(r)
		out = append(out, Extra{"CPU s/GB " + c.name, fmt.Sprintf("ours %.3f (client %.3f, server %.3f) at %.0f MB/s, raw TCP %.3f (%.3f, %.3f) at %.0f MB/s, ratio of the medians %.2fx",
			mo, bench.Median(oc), bench.Median(osv), bench.Median(om), mr, bench.Median(rc), bench.Median(rs), bench.Median(rm), finite(mo/mr))})
	}
	// Latency under load: an 8-byte ping-pong while another connection
	// streams 1 MiB messages, ours and raw.
	loaded := func(load, lat func(context.Context) (Result, error)) (Result, error) {
		var wg sync.WaitGroup
		var lerr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, lerr = load(ctx)
		}()
		time.Sleep(v.cfg.Trial / 10)
		r, err := lat(ctx)
		wg.Wait()
		if err == nil {
			err = lerr
		}
		return r, err
	}
	long := v.with(false, 4, 1, 0)
	long.Duration = v.cfg.Trial + v.cfg.Trial/5
	quiet := &progress{}
	ours, err := loaded(func(ctx context.Context) (Result, error) {
		return v.ep.runBW(ctx, Write, 1<<20, long, quiet)
	}, func(ctx context.Context) (Result, error) {
		return v.ep.runLat(ctx, WriteImm, 8, v.with(false, 1, 1, 0), quiet, v.samples)
	})
	if err != nil {
		return nil, err
	}
	raw, err := loaded(func(ctx context.Context) (Result, error) {
		return v.ep.runTCPStream(ctx, 1<<20, false, long, quiet)
	}, func(ctx context.Context) (Result, error) {
		return v.ep.runTCPPingPong(ctx, 8, v.with(false, 1, 1, 0), quiet, v.samples)
	})
	if err != nil {
		return nil, err
	}
	ours.Op, raw.Op = ours.Op+"+load", raw.Op+"+load"
	v.run.Results = append(v.run.Results, ours, raw)
	out = append(out, Extra{"latency under load (8 B, 1 MiB stream beside)",
		fmt.Sprintf("ours write-imm median %.1f us p99 %.1f us; raw TCP median %.1f us p99 %.1f us; ratio %.2fx / %.2fx",
			ours.Lat.Median, ours.Lat.P99, raw.Lat.Median, raw.Lat.P99, finite(ours.Lat.Median/raw.Lat.Median), finite(ours.Lat.P99/raw.Lat.P99))})
	for _, e := range out {
		fmt.Fprintf(v.w, "  %-14s %s: %s\n", "extra", e.Name, e.Value)
	}
	return out, nil
}
