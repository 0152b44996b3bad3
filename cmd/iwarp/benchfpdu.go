package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/goiwarp/iwarp/internal/bench"
	"github.com/goiwarp/iwarp/internal/fpdubench"
)

func init() {
	register(&command{
		name:  "benchfpdu",
		short: "measure FPDU stream throughput against raw TCP (two processes, loopback)",
		run:   runBenchFPDU,
	})
}

const benchFPDUAbout = `
Measures the MPA FPDU stream (this stack's framing layer) against raw Go TCP carrying
the same octets, in one run: this process sends, a re-executed child
receives, over loopback TCP with TCP_NODELAY. Each case runs interleaved
pairs of trials; the median of the per-pair ratios is compared with the
framing layer's tripwire (docs/fpdu.md): PASS or FAIL.

Exit status: 0 when every case met its target (with -strict=false, when
every case was measured), 1 when a case missed it or a trial failed,
2 for a bad flag or an unknown case.`

// runBenchFPDU is "iwarp benchfpdu".
func runBenchFPDU(args []string, stdout, stderr io.Writer) int {
	f := newFlags("benchfpdu", "[-pairs N] [-trial D] [-cases NAME,...] [-strict=false]", benchFPDUAbout, stdout, stderr)
	pairs := f.Int("pairs", 9, "interleaved raw-TCP/FPDU trial pairs per case (the median ratio is reported)")
	trial := f.Duration("trial", 250*time.Millisecond, "approximate duration of one trial")
	strict := f.Bool("strict", true, "exit with status 1 when a case misses its target (-strict=false: report only)")
	only := f.String("cases", "", "cases to run, comma-separated: "+strings.Join(fpdubench.CaseNames(), ", ")+" (default: all)")
	if code, ok := f.parse(args); !ok {
		return code
	}
	if f.NArg() != 0 {
		fmt.Fprintf(stderr, "iwarp benchfpdu: unexpected argument %q\n", f.Arg(0))
		return exitUsage
	}
	if perfChildRole() == childBenchReceiver {
		return benchReceiver(f)
	}
	if !f.checkInt("pairs", int64(*pairs), 1, 1000) {
		return exitUsage
	}
	if *trial <= 0 || *trial > time.Minute {
		return f.badFlag("trial", *trial, "must be positive and at most a minute")
	}
	cases, err := fpdubench.SelectCases(*only)
	if err != nil {
		return f.badFlag("cases", *only, "%v", err)
	}
	cmd, err := perfChildCmd(childBenchReceiver, "benchfpdu")
	if err != nil {
		return f.fail("%v", err)
	}
	child, err := bench.StartChild(cmd, nil)
	if err != nil {
		return f.fail("%v", err)
	}
	defer child.Stop()

	fmt.Fprintf(stdout, "benchfpdu: sender pid %d, receiver child, loopback TCP (TCP_NODELAY), %d interleaved pairs of ~%v trials per case%s\n",
		os.Getpid(), *pairs, *trial, bench.LoadNote())
	return benchFPDUCases(f, cases, *strict, func(c fpdubench.Case) (fpdubench.Result, error) {
		return fpdubench.Measure(child.Line, c, *pairs, *trial)
	})
}

// benchFPDUCases measures each case, prints its row, and returns the exit
// status: 1 when a measurement failed, or (strict) a case missed its
// target.
func benchFPDUCases(f *cmdFlags, cases []fpdubench.Case, strict bool, measure func(fpdubench.Case) (fpdubench.Result, error)) int {
	fmt.Fprintf(f.stdout, "%-11s %6s %10s %10s %7s %12s %10s %s\n", "case", "size", "tcp MB/s", "fpdu MB/s", "ratio", "FPDUs/s", "target", "result")
	var failed []string
	for _, c := range cases {
		r, err := measure(c)
		if err != nil {
			return f.fail("%s: %v", c.Name, err)
		}
		verdict := "PASS"
		if !c.Pass(r) {
			verdict, failed = "FAIL", append(failed, c.Name)
		}
		fmt.Fprintf(f.stdout, "%-11s %6d %10.0f %10.0f %6.2fx %12.0f %10s %s\n",
			c.Name, c.Size, r.TCPMBps, r.FPDUMBps, r.Ratio, r.FPDUsPerSec, c.Goal(), verdict)
	}
	switch {
	case len(cases) == 0:
		return f.fail("no case was measured")
	case len(failed) > 0 && strict:
		return f.fail("%d of %d cases FAIL: %s", len(failed), len(cases), strings.Join(failed, ", "))
	}
	return exitOK
}

// benchReceiver is the receiving child: it listens on a free loopback
// port, prints its address, and serves trials until its standard input
// closes.
func benchReceiver(f *cmdFlags) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return f.fail("%v", err)
	}
	fmt.Fprintln(f.stdout, ln.Addr())
	ctx, cancel := bench.UntilEOF(context.Background(), os.Stdin)
	defer cancel()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	if err := fpdubench.Serve(ln, func(err error) { fmt.Fprintln(f.stderr, "iwarp benchfpdu receiver:", err) }); err != nil {
		return f.fail("%v", err)
	}
	return exitOK
}
