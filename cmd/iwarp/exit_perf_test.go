package main

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdubench"
	"github.com/goiwarp/iwarp/internal/perf"
)

// deadAddr returns a loopback address nothing listens on (a port just
// released).
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

func TestPerfExitCodes(t *testing.T) {
	dead := deadAddr(t)
	perfArgs := func(a ...string) []string { return append([]string{"perf"}, a...) }
	runExitCases(t, []exitCase{
		// Success: tiny runs, the server a child process.
		{name: "tests", args: perfArgs("-op", "write,fetchadd", "-mode", "bw", "-size", "64", "-n", "10"), code: exitOK, out: "fetchadd bandwidth"},
		{name: "perftest loopback", args: perfArgs("-perftest", "-op", "read", "-mode", "lat", "-size", "8", "-n", "20"), code: exitOK, out: "ib_read_lat: done"},
		{name: "-h", args: perfArgs("-h"), code: exitOK, out: "usage: iwarp perf [options]"},
		{name: "help perf", args: []string{"help", "perf"}, code: exitOK, out: "-vs-tcp"},
		{name: "-h: 10,000 idle QPs", args: perfArgs("-h"), code: exitOK, out: "idle connected QPs for the memory target (a file descriptor each in both processes) (default 10000)"},
		{name: "-h: the targets", args: perfArgs("-h"), code: exitOK, out: "write, cpu, write-crc, cpu-crc, read, read-crc, send64, send64-crc, write-imm-lat, fetchadd-lat, resp-lat, rate16, qps, allocs, idle, extra (default: all)"},
		// Failure: no server there.
		{name: "no server", args: perfArgs("-c", dead, "-op", "write", "-mode", "bw", "-size", "64", "-n", "10"), code: exitFail, errOut: "iwarp perf: write bw 64 B: "},
		{name: "no server, HOST", args: perfArgs(dead, "-op", "send", "-mode", "lat", "-n", "10"), code: exitFail, errOut: "iwarp perf: send lat 65536 B: "},
		{name: "no perftest server", args: perfArgs("-perftest", "-c", dead), code: exitFail, errOut: "connect (first connection)"},
		// Nothing to do: a selection that matches nothing.
		{name: "unknown operation", args: perfArgs("-op", "nosuch"), code: exitUsage, errOut: `-op nosuch: unknown operation "nosuch" (have send, write,`},
		{name: "no operation", args: perfArgs("-op", ""), code: exitUsage, errOut: `unknown operation ""`},
		{name: "unknown target", args: perfArgs("-vs-tcp", "-targets", "write,nosuch"), code: exitUsage, errOut: `-targets write,nosuch: unknown target "nosuch" (have write, cpu, write-crc,`},
		{name: "target misspelt", args: perfArgs("-vs-tcp", "-targets", "resp-lat,rate-16"), code: exitUsage, errOut: `-targets resp-lat,rate-16: unknown target "rate-16" (have write, cpu, write-crc, cpu-crc, read, read-crc, send64, send64-crc, write-imm-lat, fetchadd-lat, resp-lat, rate16, qps, allocs, idle, extra)`},
		{name: "unknown mode", args: perfArgs("-mode", "bw,x"), code: exitUsage, errOut: `-mode bw,x: unknown mode "x"`},
		{name: "perftest operation", args: perfArgs("-perftest", "-op", "fetchadd"), code: exitUsage, errOut: "-op fetchadd: must be write, send or read"},
		// Bad flags: the wrong one is named.
		{name: "undefined flag", args: perfArgs("-x"), code: exitUsage, errOut: "flag provided but not defined: -x"},
		{name: "-size 0", args: perfArgs("-size", "0"), code: exitUsage, errOut: "iwarp perf: -size 0: must be between 1 and 67108864"},
		{name: "-size too big", args: perfArgs("-size", "67108865"), code: exitUsage, errOut: "-size 67108865: must be between 1"},
		{name: "-q 0", args: perfArgs("-q", "0"), code: exitUsage, errOut: "iwarp perf: -q 0: must be between 1 and 4096"},
		{name: "-qps", args: perfArgs("-qps", "5000"), code: exitUsage, errOut: "-qps 5000: must be between 1 and 4096"},
		{name: "-n negative", args: perfArgs("-n", "-1"), code: exitUsage, errOut: "-n -1: must be between 0 and 1000000000"},
		{name: "-d 0", args: perfArgs("-d", "0s"), code: exitUsage, errOut: "-d 0s: must be positive"},
		{name: "-min 0", args: perfArgs("-sweep", "-min", "0"), code: exitUsage, errOut: "-min 0: must be between 1"},
		{name: "-max below -min", args: perfArgs("-sweep", "-min", "64", "-max", "32"), code: exitUsage, errOut: "-max 32: must not be below -min 64"},
		{name: "-pairs 0", args: perfArgs("-vs-tcp", "-pairs", "0"), code: exitUsage, errOut: "-pairs 0: must be between 1 and 1000"},
		{name: "-trial 0", args: perfArgs("-vs-tcp", "-trial", "0s"), code: exitUsage, errOut: "-trial 0s: must be positive"},
		{name: "-idleqps 0", args: perfArgs("-vs-tcp", "-idleqps", "0"), code: exitUsage, errOut: "-idleqps 0: must be between 1 and 100000"},
		{name: "-idleqps too many", args: perfArgs("-vs-tcp", "-idleqps", "100001"), code: exitUsage, errOut: "-idleqps 100001: must be between 1 and 100000"},
		{name: "-loadqps", args: perfArgs("-vs-tcp", "-loadqps", "4097"), code: exitUsage, errOut: "-loadqps 4097: must be between 1 and 4096"},
		{name: "-slots too many", args: perfArgs("-slots", "1025"), code: exitUsage, errOut: "-slots 1025: must be between 1 and 1024"},
		{name: "-slots over 64 MiB", args: perfArgs("-slots", "128", "-size", "1048576"), code: exitUsage, errOut: "-slots 128: times the message size 1048576 is over 67108864 bytes"},
		{name: "-slots with -vs-tcp", args: perfArgs("-vs-tcp", "-slots", "2"), code: exitUsage, errOut: "-slots: not used with -vs-tcp"},
		{name: "-p out of range", args: perfArgs("-c", "-p", "70000"), code: exitUsage, errOut: "-p 70000: must be between 0 and 65535"},
		{name: "-p 0 for a client", args: perfArgs("-c", "-p", "0"), code: exitUsage, errOut: "-p 0: a client needs the server's port"},
		{name: "-a and -p disagree", args: perfArgs("-c", "-a", "127.0.0.1:5", "-p", "6"), code: exitUsage, errOut: "names port 5 but -p says 6"},
		{name: "-a without a role", args: perfArgs("-a", "127.0.0.1"), code: exitUsage, errOut: "-a and -p need -s"},
		{name: "-s and -c", args: perfArgs("-s", "-c"), code: exitUsage, errOut: "-c: not with -s"},
		{name: "-s and HOST", args: perfArgs("-s", "somehost"), code: exitUsage, errOut: "somehost: a server listens on -a and -p"},
		{name: "two hosts", args: perfArgs("a", "b"), code: exitUsage, errOut: "b: one server address at most"},
		{name: "-vs-tcp flag alone", args: perfArgs("-pairs", "3"), code: exitUsage, errOut: "-pairs: only with -vs-tcp"},
		{name: "-op with -vs-tcp", args: perfArgs("-vs-tcp", "-op", "write"), code: exitUsage, errOut: "-op: not used with -vs-tcp"},
		{name: "-op with -s", args: perfArgs("-s", "-op", "write"), code: exitUsage, errOut: "-op: not used with -s"},
		{name: "perftest -d", args: perfArgs("-perftest", "-d", "1s"), code: exitUsage, errOut: "-d: not used with -perftest"},
		{name: "perftest -n 0", args: perfArgs("-perftest", "-n", "0"), code: exitUsage, errOut: "-n 0: must be between 1 and 1000000000"},
		{name: "perftest -size 0", args: perfArgs("-perftest", "-size", "0"), code: exitUsage, errOut: "-size 0: must be between 1 and 67108864"},
		{name: "perftest -q 0", args: perfArgs("-perftest", "-q", "0"), code: exitUsage, errOut: "-q 0: must be between 1 and 4096"},
		{name: "perftest -mode", args: perfArgs("-perftest", "-mode", "both"), code: exitUsage, errOut: "-mode both: must be bw or lat"},
	})
}

// TestPerfExitOnVerdicts: a -vs-tcp run with a FAIL verdict exits 1 and
// names the target (after writing the JSON document); NOISY and INFO do
// not fail a run; a run that measured nothing exits 1.
func TestPerfExitOnVerdicts(t *testing.T) {
	for _, c := range []struct {
		name   string
		run    perf.Run
		code   int
		errOut string
	}{
		{"pass", perf.Run{Results: []perf.Result{{}}, Targets: []perf.Verdict{{Name: "a", Verdict: perf.VerdictPass}, {Name: "b", Verdict: perf.VerdictNoisy}, {Name: "c", Verdict: perf.VerdictInfo}}}, exitOK, ""},
		{"fail", perf.Run{Results: []perf.Result{{}}, Targets: []perf.Verdict{{Name: "a", Verdict: perf.VerdictPass}, {Name: "RDMA Write 1 MiB, CRC on", Verdict: perf.VerdictFail}}}, exitFail, "iwarp perf: 1 of 2 targets FAIL: RDMA Write 1 MiB, CRC on"},
		{"results only", perf.Run{Results: []perf.Result{{}}}, exitOK, ""},
		{"empty", perf.Run{}, exitFail, "iwarp perf: nothing was measured"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			p := newPerfFlags(&out, &errb)
			p.json = true
			if code := p.report(&c.run); code != c.code || !strings.Contains(errb.String(), c.errOut) {
				t.Errorf("exit %d, want %d; stderr %q", code, c.code, errb.String())
			}
			if !strings.Contains(out.String(), `"results"`) {
				t.Errorf("no JSON document: %q", out.String())
			}
		})
	}
}

func TestBenchFPDUExitCodes(t *testing.T) {
	bf := func(a ...string) []string { return append([]string{"benchfpdu"}, a...) }
	runExitCases(t, []exitCase{
		{name: "success", args: bf("-cases", "88B", "-pairs", "1", "-trial", "1ms", "-strict=false"), code: exitOK, out: "88B "},
		{name: "-h", args: bf("-h"), code: exitOK, out: "usage: iwarp benchfpdu"},
		{name: "unknown case", args: bf("-cases", "nosuch"), code: exitUsage, errOut: `iwarp benchfpdu: -cases nosuch: unknown case "nosuch" (have 64KiB, 1.4KiB, 88B, 64KiB+crc, 1.4KiB+crc, 88B+crc)`},
		{name: "empty case name", args: bf("-cases", "88B,"), code: exitUsage, errOut: `unknown case ""`},
		{name: "-pairs 0", args: bf("-pairs", "0"), code: exitUsage, errOut: "-pairs 0: must be between 1 and 1000"},
		{name: "-trial 0", args: bf("-trial", "0s"), code: exitUsage, errOut: "-trial 0s: must be positive"},
		{name: "-trial too long", args: bf("-trial", "2m"), code: exitUsage, errOut: "-trial 2m0s: must be positive and at most a minute"},
		{name: "undefined flag", args: bf("-child"), code: exitUsage, errOut: "flag provided but not defined: -child"},
		{name: "argument", args: bf("x"), code: exitUsage, errOut: `unexpected argument "x"`},
	})
}

// TestBenchFPDUExitOnVerdicts: a case that misses its target fails the
// run unless -strict=false; a failed measurement always does.
func TestBenchFPDUExitOnVerdicts(t *testing.T) {
	slow := func(fpdubench.Case) (fpdubench.Result, error) {
		return fpdubench.Result{Ratio: 0.1, FPDUsPerSec: 1}, nil
	}
	fast := func(fpdubench.Case) (fpdubench.Result, error) {
		return fpdubench.Result{Ratio: 2, FPDUsPerSec: 1e9}, nil
	}
	broken := func(fpdubench.Case) (fpdubench.Result, error) {
		return fpdubench.Result{}, errors.New("no acknowledgement")
	}
	for _, c := range []struct {
		name    string
		strict  bool
		measure func(fpdubench.Case) (fpdubench.Result, error)
		code    int
		errOut  string
	}{
		{"pass", true, fast, exitOK, ""},
		{"fail", true, slow, exitFail, "iwarp benchfpdu: 6 of 6 cases FAIL: 64KiB, 1.4KiB, 88B"},
		{"fail, report only", false, slow, exitOK, ""},
		{"broken", false, broken, exitFail, "iwarp benchfpdu: 64KiB: no acknowledgement"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			f := newFlags("benchfpdu", "", "", &out, &errb)
			if code := benchFPDUCases(f, fpdubench.Cases, c.strict, c.measure); code != c.code || !strings.Contains(errb.String(), c.errOut) {
				t.Errorf("exit %d, want %d; stderr %q", code, c.code, errb.String())
			}
		})
	}
}
