package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// When "iwarp perf" re-executes this test binary as its server child,
// become the server before any test runs.
func init() {
	if os.Getenv(perfChildEnv) != "" {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
}

// runPerfJSON runs "iwarp perf" with -json and decodes its document.
func runPerfJSON(t *testing.T, args ...string) perfRun {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runMain(append([]string{"perf", "-json"}, args...), &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &out, &errb)
	}
	var run perfRun
	if err := json.Unmarshal(out.Bytes(), &run); err != nil {
		t.Fatalf("%v in\n%s", err, &out)
	}
	return run
}

// TestPerfEveryOperation runs every operation in both modes, server in a
// child process, a few operations each, and checks the JSON document:
// every test is there with its counts and columns (never the numbers).
func TestPerfEveryOperation(t *testing.T) {
	run := runPerfJSON(t, "-op", "all", "-mode", "bw,lat", "-size", "64", "-n", "40", "-q", "8")
	if len(run.Results) != 16 || run.GOMAXPROCS == 0 {
		t.Fatalf("%d results, GOMAXPROCS %d", len(run.Results), run.GOMAXPROCS)
	}
	ops, _ := parsePerfOps("all")
	for i, r := range run.Results {
		op, mode := ops[i%8], []string{"bw", "lat"}[i/8]
		if r.Op != op.String() || r.Mode != mode || r.Transport != "iwarp" || !r.CRC {
			t.Errorf("result %d: %+v, want %v %s", i, r, op, mode)
			continue
		}
		if r.Ops != 40 || r.Size != op.sizeOf(64) || r.Seconds <= 0 || r.SeqErrors != 0 {
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
		if op.consumesRecv() && r.ServerRecvs < r.Ops {
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
	f, err := os.Open(chart)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
		t.Errorf("chart is %v", b)
	}
}

// TestPerfVsTCPPlumbing runs every target of -vs-tcp on tiny settings and
// checks that each is reported with a verdict (not which verdict).
func TestPerfVsTCPPlumbing(t *testing.T) {
	run := runPerfJSON(t, "-vs-tcp", "-pairs", "1", "-trial", "20ms", "-idleqps", "4", "-loadqps", "2")
	want := []string{"RDMA Write 1 MiB, CRC off", "RDMA Write 1 MiB, CRC on", "RDMA Read 1 MiB, CRC off", "64 B Sends, depth 512, CRC off",
		"64 B Sends, depth 512, CRC on", "8 B Write-with-Imm ping-pong RTT median", "8 B Write-with-Imm ping-pong RTT p99",
		"FetchAdd RTT median", "FetchAdd RTT p99", "2 QPs writing 1 MiB, total", "allocations per operation, every operation", "memory per idle QP (4 QPs)"}
	got := map[string]targetVerdict{}
	for _, tv := range run.Targets {
		got[tv.Name] = tv
		switch tv.Verdict {
		case "PASS", "FAIL", "NOISY", "INFO":
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
}

// TestPerfDescRoundTrip: the descriptor and the report survive encoding.
func TestPerfDescRoundTrip(t *testing.T) {
	d := perfDesc{op: perfSendImm, flags: perfFlagCRC | perfFlagLat, size: 1 << 20, recvs: 64, batch: 16, remote: iwarp.RemoteBuffer{STag: 0x1234, TO: 99, Len: 8}}
	got, err := decodePerfDesc(d.encode())
	if err != nil || got != d {
		t.Errorf("got %+v, %v; want %+v", got, err, d)
	}
	if _, err := decodePerfDesc([]byte("MPA ID Req Frame")); err == nil {
		t.Error("a foreign private data was accepted")
	}
	r := perfReport{recvs: 7, seqErr: 1, sys: sysSnapshot{cpuNS: 3, mallocs: 4, rss: 5, base: 6}}
	b := make([]byte, perfReportLen)
	r.encode(b)
	if got := decodePerfReport(b); got != r {
		t.Errorf("report: got %+v, want %+v", got, r)
	}
}

// TestPerfUsage: bad flags are usage errors.
func TestPerfUsage(t *testing.T) {
	for _, args := range [][]string{{"-op", "nope"}, {"-q", "0"}, {"-mode", "x"}, {"-size", "0"}, {"extra"}} {
		var out, errb bytes.Buffer
		if code := runMain(append([]string{"perf"}, args...), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d", args, code)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the progress goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPerfProgressLine: the progress line is rewritten in place with the
// label and a rate, and erased at the end; nothing is written when off.
func TestPerfProgressLine(t *testing.T) {
	var out lockedBuffer
	p := &progress{w: &out, on: true, every: time.Millisecond}
	stop := p.track("write bw 64 B", time.Now(), time.Second, func() (uint64, int) { return 1000, 64 })
	for !strings.Contains(out.String(), "MB/s") {
		time.Sleep(time.Millisecond)
	}
	stop()
	s := out.String()
	if !strings.HasPrefix(s, "\r  write bw 64 B") || !strings.HasSuffix(s, "\r") {
		t.Errorf("progress output %q", s)
	}
	var off lockedBuffer
	(&progress{w: &off}).track("x", time.Now(), time.Second, func() (uint64, int) { return 0, 0 })()
	if off.String() != "" || isTerminal(&off) {
		t.Errorf("progress off wrote %q", off.String())
	}
}
