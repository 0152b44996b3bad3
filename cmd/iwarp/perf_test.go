package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/perf"
)

// When a measuring command re-executes this test binary as its child
// (perf's server, perftest's server, benchfpdu's receiver), become the
// child before any test runs.
func init() {
	if isPerfChildRole(perfChildRole()) {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
}

// runPerfJSON runs "iwarp perf" with -json and decodes its document. A
// run may exit 1 only where failOK and a target FAILed.
func runPerfJSON(t *testing.T, failOK bool, args ...string) perf.Run {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(append([]string{"perf", "-json"}, args...), &out, &errb)
	if code != 0 && !(failOK && code == 1 && strings.Contains(errb.String(), "targets FAIL: ")) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &out, &errb)
	}
	var run perf.Run
	if err := json.Unmarshal(out.Bytes(), &run); err != nil {
		t.Fatalf("%v in\n%s", err, &out)
	}
	if code == 1 && len(run.Failed()) == 0 {
		t.Errorf("exit 1 without a FAIL verdict:\n%s", errb.String())
	}
	return run
}

// TestPerfEveryOperation runs every operation in both modes, server in a
// child process, a few operations each, and checks the JSON document:
// every test is there with its counts and columns (never the numbers).
func TestPerfEveryOperation(t *testing.T) {
	run := runPerfJSON(t, false, "-op", "all", "-mode", "bw,lat", "-size", "64", "-n", "40", "-q", "8")
	if len(run.Results) != 16 || run.GOMAXPROCS == 0 {
		t.Fatalf("%d results, GOMAXPROCS %d", len(run.Results), run.GOMAXPROCS)
	}
	ops, _ := perf.ParseOps("all")
	atomic := map[string]bool{"fetchadd": true, "cmpswap": true}
	takesRecv := map[string]bool{"send": true, "write-imm": true, "send-imm": true}
	for i, r := range run.Results {
		op, mode := ops[i%8].String(), []string{"bw", "lat"}[i/8]
		if r.Op != op || r.Mode != mode || r.Transport != "iwarp" || !r.CRC {
			t.Errorf("result %d: %+v, want %v %s", i, r, op, mode)
			continue
		}
		size := 64
		if atomic[op] {
			size = 8
		}
		if r.Ops != 40 || r.Size != size || r.Seconds <= 0 || r.SeqErrors != 0 {
			t.Errorf("%v %s: ops %d size %d seconds %v seq errors %d", op, mode, r.Ops, r.Size, r.Seconds, r.SeqErrors)
		}
		if (mode == "lat") != (r.Lat != nil) {
			t.Errorf("%v %s: latency stats %v", op, mode, r.Lat)
		}
		if r.Lat != nil && !(r.Lat.Min <= r.Lat.Median && r.Lat.Median <= r.Lat.P99 && r.Lat.P99 <= r.Lat.Max) {
			t.Errorf("%v lat: quantiles out of order: %+v", op, *r.Lat)
		}
		// Operations that take a receive at the server are all counted
		// there (warm-up included).
		if takesRecv[op] && r.ServerRecvs < r.Ops {
			t.Errorf("%v %s: server received %d of %d", op, mode, r.ServerRecvs, r.Ops)
		}
	}
}

// TestPerfSweepTableAndChart: a size sweep without CRC prints one table
// row per size and writes a PNG chart.
func TestPerfSweepTableAndChart(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "perf.png")
	var out, errb bytes.Buffer
	args := []string{"perf", "-op", "write,send", "-mode", "bw,lat", "-sweep", "-min", "8", "-max", "64", "-n", "20", "-nocrc", "-png", chart}
	if code := runMain(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, &out, &errb)
	}
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && (f[0] == "8" || f[0] == "16" || f[0] == "32" || f[0] == "64") && f[1] == "20" {
			rows++
		}
	}
	if rows != 16 || !strings.Contains(out.String(), "CRC off") || !strings.Contains(out.String(), "BW average[MB/s]") || !strings.Contains(out.String(), "t_typical") {
		t.Errorf("%d table rows (want 16) in\n%s", rows, &out)
	}
	if !strings.Contains(out.String(), "chart: "+chart) {
		t.Errorf("the chart is not mentioned:\n%s", &out)
	}
	b, err := os.ReadFile(chart)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("the chart is not a PNG file (%v)", err) // internal/perf tests what it shows
	}
}

// TestPerfVsTCPPlumbing runs every target of -vs-tcp on tiny settings and
// checks that each is reported with a verdict (not which verdict); a
// FAIL makes the run exit 1 (runPerfJSON checks that).
func TestPerfVsTCPPlumbing(t *testing.T) {
	run := runPerfJSON(t, true, "-vs-tcp", "-pairs", "1", "-trial", "20ms", "-idleqps", "4", "-loadqps", "2")
	want := []string{"RDMA Write 1 MiB, CRC off", "CPU s/GB, 1 MiB Writes, CRC off", "RDMA Write 1 MiB, CRC on", "CPU s/GB, 1 MiB Writes, CRC on",
		"RDMA Read 1 MiB, CRC off", "64 B Sends, depth 512, CRC off", "64 B Sends, depth 512, CRC on",
		"8 B Write-with-Imm ping-pong RTT median", "8 B Write-with-Imm ping-pong RTT p99", "FetchAdd RTT median", "FetchAdd RTT p99",
		"8 B Read after the responder's CQ wait, p99", "8 B Read after the responder's CQ wait, max",
		"FetchAdd after the responder's CQ wait, p99", "FetchAdd after the responder's CQ wait, max",
		"8 B Reads, one QP, 16 in flight", "FetchAdds, one QP, 16 in flight",
		"2 QPs writing 1 MiB, total", "allocations per operation, every operation", "memory per idle QP (4 QPs)"}
	got := map[string]perf.Verdict{}
	for _, tv := range run.Targets {
		got[tv.Name] = tv
		switch tv.Verdict {
		case perf.VerdictPass, perf.VerdictFail, perf.VerdictNoisy, perf.VerdictInfo:
		default:
			t.Errorf("%s: verdict %q", tv.Name, tv.Verdict)
		}
	}
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("target %q missing", name)
		}
	}
	var tcp, ours int
	for _, r := range run.Results {
		if r.Transport == "tcp" {
			tcp++
		} else {
			ours++
		}
	}
	if tcp == 0 || ours == 0 || len(run.Extra) == 0 {
		t.Errorf("%d raw TCP and %d iWARP results, %d extra lines", tcp, ours, len(run.Extra))
	}
	var extras []string
	for _, e := range run.Extra {
		extras = append(extras, e.Name)
	}
	wantExtra := []string{"8 B Writes, one QP, 16 in flight", "CPU s/GB write 1 MiB, CRC off"}
	if runtime.GOOS == "linux" { // descriptors are counted in /proc
		wantExtra = append(wantExtra, "file descriptors per idle QP")
	}
	for _, name := range wantExtra {
		if !slices.Contains(extras, name) {
			t.Errorf("no %q among the extra lines %q", name, extras)
		}
	}
}

// TestPerfIsTerminal: the progress line is for terminals only.
func TestPerfIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(&bytes.Buffer{}) || isTerminal(f) {
		t.Error("a buffer or a regular file taken for a terminal")
	}
}
