package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/goiwarp/iwarp/internal/bench"
	"github.com/goiwarp/iwarp/internal/perf"
)

// runServer is "iwarp perf -s", or the all-in-one server child: it
// listens on a free loopback port, prints its two addresses first, and
// stops when its standard input closes.
func (p *perfFlags) runServer(ctx context.Context, child bool) int {
	addr := "127.0.0.1:0"
	if !child {
		var err error
		if addr, err = p.serverAddr(perf.DefaultPort); err != nil {
			fmt.Fprintln(p.stderr, "iwarp perf:", err)
			return exitUsage
		}
	}
	if child {
		var cancel context.CancelFunc
		ctx, cancel = bench.UntilEOF(ctx, os.Stdin)
		defer cancel()
	}
	err := perf.Serve(ctx, addr, func(iw, tcp net.Addr) {
		if child {
			fmt.Fprintln(p.stdout, iw, tcp)
		} else {
			fmt.Fprintf(p.stdout, "iwarp perf server: iWARP on %v, raw TCP on %v\n", iw, tcp)
		}
	}, func(err error) { fmt.Fprintln(p.stderr, "iwarp perf server:", err) })
	if err != nil {
		return p.fail("%v", err)
	}
	return exitOK
}

// config is the measurement the flags ask for (checked by check).
func (p *perfFlags) config(progress bool) *perf.Config {
	cfg := &perf.Config{Iters: p.iters, Duration: p.dur, Depth: p.depth, QPs: p.qps, Slots: p.slots, CRC: !p.noCRC, Progress: progress,
		Pairs: p.pairs, Trial: p.trial, IdleQPs: p.idleQPs, LoadQPs: p.loadQPs}
	cfg.Ops, _ = perf.ParseOps(p.ops)
	cfg.Modes, _ = perf.ParseModes(p.mode)
	cfg.Targets, _ = perf.ParseTargets(p.targets)
	cfg.Sizes = []int{p.size}
	if p.sweep {
		cfg.Sizes = nil
		for n := p.minSize; n <= p.maxSize; n *= 2 {
			cfg.Sizes = append(cfg.Sizes, n)
		}
	}
	return cfg
}

// runClient measures against the server of -c (or HOST), or against a
// server child started on loopback, and prints the results as asked.
func (p *perfFlags) runClient(ctx context.Context) int {
	iwarpAddr, tcpAddr := "", ""
	if p.client || p.hostGiven {
		var err error
		if iwarpAddr, err = p.serverAddr(perf.DefaultPort); err != nil {
			fmt.Fprintln(p.stderr, "iwarp perf:", err)
			return exitUsage
		}
	} else {
		var args []string
		if p.cpuProfile != "" {
			args = []string{"-cpuprofile", p.cpuProfile}
		}
		cmd, err := perfChildCmd(childPerfServer, append([]string{"perf"}, args...)...)
		if err != nil {
			return p.fail("%v", err)
		}
		child, err := bench.StartChild(cmd, nil)
		if err != nil {
			return p.fail("%v", err)
		}
		defer child.Stop()
		iwarpAddr, tcpAddr, _ = strings.Cut(child.Line, " ")
	}
	ep, err := perf.NewEndpoint(iwarpAddr, tcpAddr)
	if err != nil {
		return p.fail("%v", err)
	}
	w := p.stdout
	if p.json {
		w = io.Discard
	}
	cfg := p.config(isTerminal(p.stdout) && !p.json)
	var run *perf.Run
	if p.vsTCP {
		run, err = perf.RunVsTCP(ctx, ep, cfg, w)
	} else {
		run, err = perf.RunTests(ctx, ep, cfg, w)
	}
	if err != nil {
		return p.fail("%v", err)
	}
	return p.report(run)
}

// report writes the chart and the JSON document as asked, and returns the
// exit status of the run: 1 if a target FAILed or nothing was measured.
func (p *perfFlags) report(run *perf.Run) int {
	if p.png != "" {
		if err := perf.WriteChart(p.png, run.Results); err != nil {
			return p.fail("%v", err)
		}
		if !p.json {
			fmt.Fprintf(p.stdout, "chart: %s\n", p.png)
		}
	}
	if p.json {
		if err := run.WriteJSON(p.stdout); err != nil {
			return p.fail("%v", err)
		}
	}
	if failed := run.Failed(); len(failed) > 0 {
		return p.fail("%d of %d targets FAIL: %s", len(failed), len(run.Targets), strings.Join(failed, "; "))
	}
	if len(run.Results) == 0 && len(run.Targets) == 0 {
		return p.fail("nothing was measured")
	}
	return exitOK
}
