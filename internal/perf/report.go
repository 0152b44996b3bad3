package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/goiwarp/iwarp/internal/bench"
)

// Run is what a run measured: the JSON document of "iwarp perf -json".
type Run struct {
	Time       time.Time `json:"time"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	NumCPU     int       `json:"num_cpu"`
	Load       string    `json:"load_average,omitempty"`
	Results    []Result  `json:"results"`
	Targets    []Verdict `json:"targets,omitempty"`
	Extra      []Extra   `json:"extra,omitempty"`
}

// RunTests runs every operation, mode and size of cfg against ep,
// printing a perftest-style table per test to w (io.Discard for none).
// The Run holds the results measured until an error, if any.
func RunTests(ctx context.Context, ep *Endpoint, cfg *Config, w io.Writer) (*Run, error) {
	run := newRun()
	if err := cfg.check(false); err != nil {
		return run, err
	}
	prog := &progress{w: w, on: cfg.Progress}
	samples := make([]time.Duration, maxSamples)
	fmt.Fprintf(w, "iwarp perf: client pid %d, server %s, GOMAXPROCS %d, CRC %v%s\n",
		os.Getpid(), ep.iwarpAddr, run.GOMAXPROCS, onOff(cfg.CRC), bench.LoadNote())
	for _, mode := range cfg.Modes {
		for _, op := range cfg.Ops {
			printTableHeader(w, op.String(), mode, cfg)
			seen := map[int]bool{}
			for _, size := range cfg.Sizes {
				if seen[op.sizeOf(size)] {
					continue
				}
				seen[op.sizeOf(size)] = true
				var r Result
				var err error
				if mode == "bw" {
					r, err = ep.runBW(ctx, op, size, cfg, prog)
				} else {
					r, err = ep.runLat(ctx, op, size, cfg, prog, samples)
				}
				if err != nil {
					return run, fmt.Errorf("%v %s %d B: %w", op, mode, size, err)
				}
				run.Results = append(run.Results, r)
				printRow(w, &r)
			}
		}
	}
	return run, nil
}

func newRun() *Run {
	return &Run{Time: time.Now().UTC(), GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), Load: bench.LoadAverage()}
}

// WriteJSON writes the run as one indented JSON document.
func (run *Run) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(run)
}

// Failed returns the names of the targets whose verdict is FAIL.
func (run *Run) Failed() []string {
	var names []string
	for _, t := range run.Targets {
		if t.Verdict == VerdictFail {
			names = append(names, t.Name)
		}
	}
	return names
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

const rule = "---------------------------------------------------------------------------------------------------"

func printTableHeader(w io.Writer, op, mode string, cfg *Config) {
	fmt.Fprintln(w, rule)
	what := "bandwidth"
	if mode == "lat" {
		what = "latency (round trip, blocking API)"
	}
	fmt.Fprintf(w, "                    %s %s   QPs %d  depth %d  CRC %s\n", op, what, cfg.QPs, cfg.Depth, onOff(cfg.CRC))
	fmt.Fprintln(w, rule)
	if mode == "lat" {
		fmt.Fprintf(w, " %-9s %-11s %-9s %-9s %-9s %-9s %-9s %-9s %-9s %s\n", "#bytes", "#iterations", "t_min", "t_typical", "t_avg", "t_stdev", "99%", "99.9%", "t_max", "[usec]  allocs/op")
		return
	}
	fmt.Fprintf(w, " %-9s %-11s %-16s %-14s %-13s %-10s %s\n", "#bytes", "#iterations", "BW average[MB/s]", "MsgRate[Mpps]", "CPU[s/GB]", "allocs/op", "(client/server)")
}

func printRow(w io.Writer, r *Result) {
	if r.Lat != nil {
		l := r.Lat
		fmt.Fprintf(w, " %-9d %-11d %-9.2f %-9.2f %-9.2f %-9.2f %-9.2f %-9.2f %-9.2f        %.2f/%.2f\n",
			r.Size, r.Ops, l.Min, l.Median, l.Avg, l.Stdev, l.P99, l.P999, l.Max, r.ClientAllocsPerOp, r.ServerAllocsPerOp)
		return
	}
	fmt.Fprintf(w, " %-9d %-11d %-16.2f %-14.6f %-13.3f %.2f/%.2f\n",
		r.Size, r.Ops, r.MBps, r.MsgRate/1e6, r.CPUSecPerGB, r.ClientAllocsPerOp, r.ServerAllocsPerOp)
}
