package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"
)

func init() {
	register(&command{
		name:  "perf",
		short: "perftest-style bandwidth and latency of every operation, and the proof against raw TCP",
		run:   runPerf,
	})
}

// perfConfig is what one "iwarp perf" run measures.
type perfConfig struct {
	ops      []perfOp
	modes    []string // "bw", "lat"
	sizes    []int
	iters    int           // operations per test; 0: run for duration
	duration time.Duration // per test when iters is 0
	depth    int           // work requests in flight per QP (bandwidth tests)
	qps      int           // QPs per test, each driven by its own goroutine
	crc      bool
	json     bool
	png      string
	progress bool // a progress line on stdout (a terminal)

	// --vs-tcp
	vsTCP   bool
	pairs   int
	idleQPs int
	loadQPs int
	targets string
	trial   time.Duration // duration of each --vs-tcp trial
}

// runPerf is "iwarp perf".
func runPerf(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("perf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg perfConfig
	server := fs.Bool("s", false, "run as the server (responder) only, on -a")
	addr := fs.String("a", "", "with -s: the address to listen on (default 127.0.0.1:7175; raw TCP on the next port)")
	client := fs.String("c", "", "run as a client of the server at this address (iWARP port; raw TCP on the next port)")
	ops := fs.String("op", "all", "operations, comma-separated: "+strings.Join(perfOpNames(), ",")+" or all")
	mode := fs.String("mode", "bw,lat", "what to measure: bw (bandwidth, message rate), lat (latency, blocking API), or both")
	size := fs.Int("size", 65536, "message size in bytes (atomics are always 8)")
	sweep := fs.Bool("sweep", false, "sweep sizes in powers of two from -min to -max instead of -size")
	minSize := fs.Int("min", 8, "smallest size of -sweep")
	maxSize := fs.Int("max", 1<<20, "largest size of -sweep")
	fs.IntVar(&cfg.iters, "n", 0, "operations per test (0: run for -d)")
	fs.DurationVar(&cfg.duration, "d", time.Second, "duration of each test when -n is 0")
	fs.IntVar(&cfg.depth, "q", 32, "queue depth: work requests in flight per QP in bandwidth tests")
	fs.IntVar(&cfg.qps, "qps", 1, "QPs per test, written to at once (one goroutine each)")
	noCRC := fs.Bool("nocrc", false, "do not use MPA CRCs (both sides)")
	fs.BoolVar(&cfg.json, "json", false, "print the results as one JSON document instead of tables")
	fs.StringVar(&cfg.png, "png", "", "write a PNG chart of bandwidth and latency against size to this file")
	fs.BoolVar(&cfg.vsTCP, "vs-tcp", false, "compare with raw TCP in the same run: interleaved pairs, ratios, the targets of docs/performance.md")
	fs.IntVar(&cfg.pairs, "pairs", 5, "--vs-tcp: interleaved pairs per target (median of per-pair ratios)")
	fs.DurationVar(&cfg.trial, "trial", 2*time.Second, "--vs-tcp: duration of each throughput trial")
	fs.IntVar(&cfg.idleQPs, "idleqps", 1000, "--vs-tcp: idle connected QPs for the memory target")
	fs.IntVar(&cfg.loadQPs, "loadqps", 64, "--vs-tcp: QPs writing at once for the aggregate target")
	fs.StringVar(&cfg.targets, "targets", "", "--vs-tcp: targets to run, comma-separated: write, write-crc, read, read-crc, send64, send64-crc, write-imm-lat, fetchadd-lat, qps, allocs, idle, extra (default: all)")
	child := fs.Bool("child", false, "run as the all-in-one server child (internal)")
	perftest := fs.Bool("perftest", false, "speak perftest 4.5's protocol (ib_{write,send,read}_{bw,lat} -R): with -s serve a perftest client, with -c run against a perftest server (-op write|send|read, -mode bw|lat, -size, -n; default port 18515)")
	cpuProfile := fs.String("cpuprofile", "", "write CPU profiles: FILE.client, and FILE.server for the all-in-one server child (or FILE with -s)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: iwarp perf [-op LIST] [-mode bw,lat] [-size N | -sweep] [-n N | -d D] [-q N] [-qps N] [-nocrc] [-json] [-png FILE]")
		fmt.Fprintln(stderr, "       iwarp perf -vs-tcp [-pairs N] [-trial D] [-targets LIST]")
		fmt.Fprintln(stderr, "       iwarp perf -s [-a ADDR]      (server)     iwarp perf -c ADDR ...   (client)")
		fmt.Fprintln(stderr, "       iwarp perf -perftest [-s [-a ADDR] | -c HOST[:18515]] [-op write|send|read] [-mode bw|lat] [-size N] [-n N] [-nocrc]")
		fmt.Fprintln(stderr, "Without -s or -c the server is a re-executed child process on loopback.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	cfg.crc = !*noCRC
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *cpuProfile != "" {
		name := *cpuProfile
		switch {
		case *child:
			name += ".server"
		case !*server:
			name += ".client"
		}
		stopProfile, err := startCPUProfile(name)
		if err != nil {
			fmt.Fprintln(stderr, "iwarp perf:", err)
			return 1
		}
		defer stopProfile()
	}
	if *perftest {
		return runPerftest(ctx, perftestArgs{server: *server, child: *child, addr: *addr, client: *client, op: *ops, mode: *mode,
			size: *size, iters: cfg.iters, depth: cfg.depth, noCRC: *noCRC, set: setFlags(fs)}, stdout, stderr)
	}
	if *child || *server {
		a := *addr
		if a == "" {
			a = "127.0.0.1:7175"
			if *child {
				a = "127.0.0.1:0"
			}
		}
		if err := perfServe(ctx, a, stdout, *child); err != nil {
			fmt.Fprintln(stderr, "iwarp perf:", err)
			return 1
		}
		return 0
	}
	var err error
	if cfg.ops, err = parsePerfOps(*ops); err != nil {
		fmt.Fprintln(stderr, "iwarp perf:", err)
		return 2
	}
	for _, m := range strings.Split(*mode, ",") {
		switch m {
		case "bw", "lat":
			cfg.modes = append(cfg.modes, m)
		case "both":
			cfg.modes = append(cfg.modes, "bw", "lat")
		default:
			fmt.Fprintf(stderr, "iwarp perf: unknown -mode %q\n", m)
			return 2
		}
	}
	if *size < 1 || *size > 1<<26 || *minSize < 1 || *maxSize > 1<<26 || *minSize > *maxSize ||
		cfg.depth < 1 || cfg.depth > 4096 || cfg.qps < 1 || cfg.qps > 4096 || cfg.iters < 0 || cfg.duration <= 0 || cfg.pairs < 1 {
		fmt.Fprintln(stderr, "iwarp perf: sizes must be 1 .. 64 MiB, -q and -qps 1 .. 4096, -d and -pairs positive")
		return 2
	}
	cfg.sizes = []int{*size}
	if *sweep {
		cfg.sizes = cfg.sizes[:0]
		for n := *minSize; n <= *maxSize; n *= 2 {
			cfg.sizes = append(cfg.sizes, n)
		}
	}
	cfg.progress = isTerminal(stdout) && !cfg.json

	srv := *client
	if srv == "" {
		a, stopChild, err := startPerfChild(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "iwarp perf:", err)
			return 1
		}
		defer stopChild()
		srv = a
	}
	ep, err := newPerfEndpoint(srv)
	if err != nil {
		fmt.Fprintln(stderr, "iwarp perf:", err)
		return 1
	}
	if cfg.vsTCP {
		err = runVsTCP(ctx, ep, &cfg, stdout)
	} else {
		err = runPerfTests(ctx, ep, &cfg, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "iwarp perf:", err)
		return 1
	}
	return 0
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
