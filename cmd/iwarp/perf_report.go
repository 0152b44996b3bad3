package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// perfRun is the JSON document of a run.
type perfRun struct {
	Time       time.Time       `json:"time"`
	GOMAXPROCS int             `json:"gomaxprocs"`
	NumCPU     int             `json:"num_cpu"`
	Load       string          `json:"load_average,omitempty"`
	Results    []perfResult    `json:"results"`
	Targets    []targetVerdict `json:"targets,omitempty"`
	Extra      []perfExtra     `json:"extra,omitempty"`
}

// runPerfTests runs every requested operation, mode and size, printing a
// perftest-style table per test (or, with -json, one document at the end).
func runPerfTests(ctx context.Context, ep *perfEndpoint, cfg *perfConfig, stdout io.Writer) error {
	run := newPerfRun()
	prog := &progress{w: stdout, on: cfg.progress}
	samples := make([]time.Duration, perfMaxSamples)
	if !cfg.json {
		fmt.Fprintf(stdout, "iwarp perf: client pid %d, server %s, GOMAXPROCS %d, CRC %v%s\n",
			os.Getpid(), ep.iwarpAddr, run.GOMAXPROCS, onOff(cfg.crc), loadAverage())
	}
	for _, mode := range cfg.modes {
		for _, op := range cfg.ops {
			if !cfg.json {
				printTableHeader(stdout, op.String(), mode, cfg)
			}
			seen := map[int]bool{}
			for _, size := range cfg.sizes {
				if seen[op.sizeOf(size)] {
					continue
				}
				seen[op.sizeOf(size)] = true
				var r perfResult
				var err error
				if mode == "bw" {
					r, err = ep.runBW(ctx, op, size, cfg, prog)
				} else {
					r, err = ep.runLat(ctx, op, size, cfg, prog, samples)
				}
				if err != nil {
					return fmt.Errorf("%v %s %d B: %w", op, mode, size, err)
				}
				run.Results = append(run.Results, r)
				if !cfg.json {
					printRow(stdout, &r)
				}
			}
		}
	}
	return run.finish(cfg, stdout)
}

func newPerfRun() *perfRun {
	return &perfRun{Time: time.Now().UTC(), GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), Load: loadAverageValue()}
}

// finish writes the JSON document and the chart, as asked.
func (run *perfRun) finish(cfg *perfConfig, stdout io.Writer) error {
	if cfg.png != "" {
		if err := writePerfChart(cfg.png, run.Results); err != nil {
			return err
		}
		if !cfg.json {
			fmt.Fprintf(stdout, "chart: %s\n", cfg.png)
		}
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(run)
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// loadAverageValue returns the 1, 5 and 15 minute load averages, or "".
func loadAverageValue() string {
	s := loadAverage()
	if s == "" {
		return ""
	}
	return s[len(", load average "):]
}

const perfRule = "---------------------------------------------------------------------------------------------------"

func printTableHeader(w io.Writer, op, mode string, cfg *perfConfig) {
	fmt.Fprintln(w, perfRule)
	what := "bandwidth"
	if mode == "lat" {
		what = "latency (round trip, blocking API)"
	}
	fmt.Fprintf(w, "                    %s %s   QPs %d  depth %d  CRC %s\n", op, what, cfg.qps, cfg.depth, onOff(cfg.crc))
	fmt.Fprintln(w, perfRule)
	if mode == "lat" {
		fmt.Fprintf(w, " %-9s %-11s %-9s %-9s %-9s %-9s %-9s %-9s %-9s %s\n", "#bytes", "#iterations", "t_min", "t_typical", "t_avg", "t_stdev", "99%", "99.9%", "t_max", "[usec]  allocs/op")
		return
	}
	fmt.Fprintf(w, " %-9s %-11s %-16s %-14s %-13s %-10s %s\n", "#bytes", "#iterations", "BW average[MB/s]", "MsgRate[Mpps]", "CPU[s/GB]", "allocs/op", "(client/server)")
}

func printRow(w io.Writer, r *perfResult) {
	if r.Lat != nil {
		l := r.Lat
		fmt.Fprintf(w, " %-9d %-11d %-9.2f %-9.2f %-9.2f %-9.2f %-9.2f %-9.2f %-9.2f        %.2f/%.2f\n",
			r.Size, r.Ops, l.Min, l.Median, l.Avg, l.Stdev, l.P99, l.P999, l.Max, r.ClientAllocsPerOp, r.ServerAllocsPerOp)
		return
	}
	fmt.Fprintf(w, " %-9d %-11d %-16.2f %-14.6f %-13.3f %.2f/%.2f\n",
		r.Size, r.Ops, r.MBps, r.MsgRate/1e6, r.CPUSecPerGB, r.ClientAllocsPerOp, r.ServerAllocsPerOp)
}
