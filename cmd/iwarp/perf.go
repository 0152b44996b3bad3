package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/goiwarp/iwarp/internal/perf"
)

func init() {
	register(&command{
		name:  "perf",
		short: "perftest-style bandwidth and latency of every operation, and the proof against raw TCP",
		run:   runPerf,
	})
}

const perfAbout = `
Measures the bandwidth and latency of every data operation (perftest-style
tables, -json, a -png chart), or with -vs-tcp every target of
docs/performance.md against raw TCP between the same two processes.
Without -s or -c the server is this program re-executed on loopback;
-s runs a server alone (iWARP on -a/-p, default 127.0.0.1:7175, raw TCP
on the next port) and -c, or a HOST argument as perftest takes it, a
client of one.

-perftest speaks perftest 4.5's protocol (ib_{write,send,read}_{bw,lat}
-R; default port 18515): -s serves a perftest client, -c or HOST runs
against a perftest server, and without either both ends are ours on
loopback. -op write|send|read and -mode bw|lat pick the program; -size,
-n and -q are perftest's -s, -n and -t (defaults as perftest's).

Exit status: 0 when every test ran (and with -vs-tcp no target FAILed),
1 when a test failed, a target FAILed or nothing was measured, 2 for a
bad flag.`

// perfFlags are the flags of "iwarp perf" and their values.
type perfFlags struct {
	*cmdFlags
	server, client, perftest, sweep, noCRC, json, vsTCP bool

	addr, host, ops, mode, png, targets, cpuProfile string
	hostGiven                                       bool

	port, size, minSize, maxSize, iters, depth, qps, slots, pairs, idleQPs, loadQPs int
	dur, trial                                                                      time.Duration
}

func newPerfFlags(stdout, stderr io.Writer) *perfFlags {
	p := &perfFlags{cmdFlags: newFlags("perf", "[options] [-s | [-c] HOST[:PORT]]", perfAbout, stdout, stderr)}
	p.BoolVar(&p.server, "s", false, "run a server alone, listening on -a and -p (raw TCP on the next port)")
	p.BoolVar(&p.client, "c", false, "run against the server at HOST[:PORT] (or -a, -p)")
	p.StringVar(&p.addr, "a", "", "with -s the `HOST[:PORT]` to listen on, with -c the server's (default host 127.0.0.1)")
	p.IntVar(&p.port, "p", 0, "the port (default 7175; with -perftest perftest's 18515)")
	p.StringVar(&p.ops, "op", "all", "operations, comma-separated: "+strings.Join(perf.OpNames(), ",")+" or all")
	p.StringVar(&p.mode, "mode", "bw,lat", "what to measure: bw (bandwidth, message rate), lat (latency, blocking API), or both")
	p.IntVar(&p.size, "size", 65536, "message size in bytes (atomics always move 8)")
	p.BoolVar(&p.sweep, "sweep", false, "sweep sizes in powers of two from -min to -max instead of -size")
	p.IntVar(&p.minSize, "min", 8, "smallest size of -sweep")
	p.IntVar(&p.maxSize, "max", 1<<20, "largest size of -sweep")
	p.IntVar(&p.iters, "n", 0, "operations per test (0: run for -d)")
	p.DurationVar(&p.dur, "d", time.Second, "duration of each test when -n is 0")
	p.IntVar(&p.depth, "q", 32, "queue depth: work requests in flight per QP in bandwidth tests")
	p.IntVar(&p.qps, "qps", 1, "QPs per test, written to at once (one goroutine each)")
	p.IntVar(&p.slots, "slots", 1, "Write and Read bandwidth tests: buffers of -size each QP cycles through on each side (the memory touched)")
	p.BoolVar(&p.noCRC, "nocrc", false, "do not use MPA CRCs (both sides)")
	p.BoolVar(&p.json, "json", false, "print the results as one JSON document instead of tables")
	p.StringVar(&p.png, "png", "", "write a PNG chart of bandwidth and latency against size to this `file`")
	p.BoolVar(&p.vsTCP, "vs-tcp", false, "compare with raw TCP: interleaved pairs, ratios, the targets of docs/performance.md")
	p.IntVar(&p.pairs, "pairs", 5, "-vs-tcp: interleaved pairs per target (median of per-pair ratios)")
	p.DurationVar(&p.trial, "trial", 2*time.Second, "-vs-tcp: duration of each trial")
	p.IntVar(&p.idleQPs, "idleqps", 10000, "-vs-tcp: idle connected QPs for the memory target (a file descriptor each in both processes)")
	p.IntVar(&p.loadQPs, "loadqps", 64, "-vs-tcp: QPs writing at once for the aggregate target")
	p.StringVar(&p.targets, "targets", "", "-vs-tcp: targets to run, comma-separated: "+strings.Join(perf.TargetKeys, ", ")+" (default: all)")
	p.BoolVar(&p.perftest, "perftest", false, "speak perftest 4.5's protocol (see above)")
	p.StringVar(&p.cpuProfile, "cpuprofile", "", "write CPU profiles: `FILE`.client and FILE.server (the server child), or FILE with -s")
	return p
}

// parseArgs parses the flags with at most one HOST[:PORT] among them
// (perftest's programs take options after the host too).
func (p *perfFlags) parseArgs(args []string) (int, bool) {
	code, ok := p.parse(args)
	for ok && p.NArg() > 0 {
		if p.hostGiven {
			fmt.Fprintf(p.stderr, "iwarp perf: %s: one server address at most (%s was given)\n", p.Arg(0), p.host)
			return exitUsage, false
		}
		p.host, p.hostGiven = p.Arg(0), true
		code, ok = p.parse(p.Args()[1:])
	}
	return code, ok
}

// runPerf is "iwarp perf".
func runPerf(args []string, stdout, stderr io.Writer) int {
	p := newPerfFlags(stdout, stderr)
	if code, ok := p.parseArgs(args); !ok {
		return code
	}
	role := perfChildRole()
	if code, ok := p.check(role); !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if p.cpuProfile != "" {
		name := p.cpuProfile
		switch {
		case role != "":
			name += ".server"
		case !p.server:
			name += ".client"
		}
		stopProfile, err := startCPUProfile(name)
		if err != nil {
			return p.fail("%v", err)
		}
		defer stopProfile()
	}
	switch {
	case p.perftest || role == childPerftestServer:
		return p.runPerftest(ctx, role == childPerftestServer)
	case p.server || role == childPerfServer:
		return p.runServer(ctx, role == childPerfServer)
	}
	return p.runClient(ctx)
}
