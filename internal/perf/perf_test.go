package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/bench"
)

// startServer runs Serve on a free loopback port until the test ends and
// returns a client of it.
func startServer(t *testing.T) *Endpoint {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, "127.0.0.1:0", func(iw, tcp net.Addr) { addrs <- [2]net.Addr{iw, tcp} },
			func(err error) { t.Errorf("server: %v", err) })
	}()
	var a [2]net.Addr
	select {
	case a = <-addrs:
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	ep, err := NewEndpoint(a[0].String(), a[1].String())
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// TestRunTests measures a few operations in both modes against a server
// in this process and checks the results' counts and columns (never the
// numbers), the tables and the JSON document.
func TestRunTests(t *testing.T) {
	ep := startServer(t)
	ops, err := ParseOps("send,write,fetchadd")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Ops: ops, Modes: []string{"bw", "lat"}, Sizes: []int{64}, Iters: 30, Depth: 8, QPs: 2, CRC: true}
	var out bytes.Buffer
	run, err := RunTests(context.Background(), ep, cfg, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	if len(run.Results) != 6 {
		t.Fatalf("%d results:\n%s", len(run.Results), &out)
	}
	for i, r := range run.Results {
		op, mode := ops[i%3], cfg.Modes[i/3]
		if r.Op != op.String() || r.Mode != mode || r.Transport != "iwarp" || !r.CRC || r.Size != op.sizeOf(64) {
			t.Errorf("result %d: %+v, want %v %s", i, r, op, mode)
		}
		wantOps := uint64(30)
		if mode == "bw" {
			wantOps = 60 // two QPs
		}
		if r.Ops != wantOps || r.Seconds <= 0 || r.SeqErrors != 0 || (mode == "lat") != (r.Lat != nil) {
			t.Errorf("%v %s: ops %d seconds %v seq errors %d latency %v", op, mode, r.Ops, r.Seconds, r.SeqErrors, r.Lat)
		}
		if op.consumesRecv() && r.ServerRecvs < r.Ops {
			t.Errorf("%v %s: the server received %d of %d", op, mode, r.ServerRecvs, r.Ops)
		}
	}
	for _, want := range []string{"send bandwidth   QPs 2  depth 8  CRC on", "fetchadd latency (round trip, blocking API)", "BW average[MB/s]", "t_typical"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, &out)
		}
	}
	var doc bytes.Buffer
	if err := run.WriteJSON(&doc); err != nil {
		t.Fatal(err)
	}
	var back Run
	if err := json.Unmarshal(doc.Bytes(), &back); err != nil || len(back.Results) != 6 || back.Results[3].Lat == nil || back.GOMAXPROCS == 0 {
		t.Errorf("JSON document does not round-trip (%v):\n%s", err, &doc)
	}
}

// TestRunVsTCPPlumbing runs two targets on tiny settings against a server
// in this process: each is reported with a verdict (not which), with raw
// TCP results beside ours.
func TestRunVsTCPPlumbing(t *testing.T) {
	ep := startServer(t)
	run, names, out := runPairTargets(t, ep, "write", "fetchadd-lat")
	want := []string{"RDMA Write 1 MiB, CRC off", "FetchAdd RTT median", "FetchAdd RTT p99"}
	if !slices.Equal(names, want) {
		t.Errorf("targets %q, want %q", names, want)
	}
	if len(run.Results) != 8 || !strings.Contains(out, "targets (medians;") {
		t.Errorf("%d results (want 4 pairs of 2)\n%s", len(run.Results), out)
	}
	if _, err := RunVsTCP(context.Background(), ep, &Config{Pairs: 1, Trial: time.Millisecond, IdleQPs: 1, LoadQPs: 1, Targets: []string{"nosuch"}}, io.Discard); err == nil {
		t.Error("an unknown target was run")
	}
}

// runPairTargets runs pair targets on tiny settings (2 pairs of 20 ms, 2
// QPs for qps) against ep and checks that each was judged on both pairs.
// It returns the run, the targets' names and the output.
func runPairTargets(t *testing.T, ep *Endpoint, targets ...string) (*Run, []string, string) {
	t.Helper()
	cfg := &Config{Pairs: 2, Trial: 20 * time.Millisecond, IdleQPs: 2, LoadQPs: 2, Targets: targets}
	var out bytes.Buffer
	run, err := RunVsTCP(context.Background(), ep, cfg, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	var names []string
	for _, v := range run.Targets {
		names = append(names, v.Name)
		if !slices.Contains([]string{VerdictPass, VerdictFail, VerdictNoisy}, v.Verdict) || len(v.Values) != 2 {
			t.Errorf("%s: verdict %q, %d pair values", v.Name, v.Verdict, len(v.Values))
		}
	}
	return run, names, out.String()
}

func TestFailed(t *testing.T) {
	run := &Run{Targets: []Verdict{{Name: "a", Verdict: VerdictPass}, {Name: "b", Verdict: VerdictFail}, {Name: "c", Verdict: VerdictNoisy}, {Name: "d", Verdict: VerdictFail}}}
	if got := run.Failed(); !slices.Equal(got, []string{"b", "d"}) {
		t.Errorf("Failed() = %q", got)
	}
	if got := (&Run{}).Failed(); got != nil {
		t.Errorf("no targets: Failed() = %q", got)
	}
}

// TestTargetKeys: the keys ParseTargets accepts are the targets RunVsTCP
// runs, in its order.
func TestTargetKeys(t *testing.T) {
	var keys []string
	for _, s := range (&vsTCP{cfg: &Config{LoadQPs: 1}}).specs() {
		for _, m := range s.metrics {
			if !slices.Contains(keys, m.key) {
				keys = append(keys, m.key)
			}
		}
	}
	keys = append(keys, "allocs", "idle", "extra")
	if !slices.Equal(keys, TargetKeys) {
		t.Errorf("RunVsTCP runs %q, TargetKeys %q", keys, TargetKeys)
	}
	if got, err := ParseTargets("read,idle"); err != nil || !slices.Equal(got, []string{"read", "idle"}) {
		t.Errorf("ParseTargets: %q, %v", got, err)
	}
	if got, err := ParseTargets(""); err != nil || got != nil {
		t.Errorf(`ParseTargets(""): %q, %v`, got, err)
	}
	if _, err := ParseTargets("read,nosuch"); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("ParseTargets with an unknown key: %v", err)
	}
}

func TestParseOpsAndModes(t *testing.T) {
	all, err := ParseOps("all")
	if err != nil || len(all) != 8 || !slices.Equal(OpNames(), []string{"send", "write", "read", "fetchadd", "cmpswap", "write-imm", "send-imm", "read-v2"}) {
		t.Errorf("all: %v %v %v", all, err, OpNames())
	}
	for i, op := range all {
		if op.String() != OpNames()[i] {
			t.Errorf("op %d is %v", i, op)
		}
	}
	if _, err := ParseOps("write,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown operation: %v", err)
	}
	if m, err := ParseModes("both"); err != nil || !slices.Equal(m, []string{"bw", "lat"}) {
		t.Errorf("both: %v %v", m, err)
	}
	if _, err := ParseModes("bw,x"); err == nil {
		t.Error("mode x accepted")
	}
	bad := []Config{{}, {Ops: all, Modes: []string{"bw"}, Sizes: []int{0}, Iters: 1, Depth: 1, QPs: 1},
		{Ops: all, Modes: []string{"bw"}, Sizes: []int{8}, Depth: 1, QPs: 1}, {Ops: all, Modes: []string{"bw"}, Sizes: []int{8}, Iters: 1, Depth: MaxDepth + 1, QPs: 1}}
	for _, c := range bad {
		if err := c.check(false); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestChart draws a chart of a few results: a PNG of the chart's size
// with text in the title's place.
func TestChart(t *testing.T) {
	results := []Result{
		{Op: "write", Mode: "bw", Transport: "iwarp", CRC: true, Size: 64, QPs: 1, MBps: 100},
		{Op: "write", Mode: "bw", Transport: "iwarp", CRC: true, Size: 4096, QPs: 1, MBps: 2000},
		{Op: "stream", Mode: "bw", Transport: "tcp", Size: 4096, QPs: 1, MBps: 2500},
		{Op: "send", Mode: "lat", Transport: "iwarp", Size: 64, QPs: 1, Lat: &bench.Latency{Median: 20}},
	}
	path := filepath.Join(t.TempDir(), "c.png")
	if err := WriteChart(path, results); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != chartW || b.Dy() != chartH {
		t.Fatalf("chart is %v", b)
	}
	dark := 0
	for y := 8; y < 8+2*chartFace.Height; y++ {
		for x := panelL; x < panelL+textWidth("iwarp perf", 2); x++ {
			if r, _, _, _ := img.At(x, y).RGBA(); r < 0x8000 {
				dark++
			}
		}
	}
	if dark < 100 {
		t.Errorf("%d dark pixels where the title starts", dark)
	}
}

// TestDescRoundTrip: the descriptor and the report survive encoding.
func TestDescRoundTrip(t *testing.T) {
	d := desc{op: SendImm, flags: flagCRC | flagLat, size: 1 << 20, recvs: 64, batch: 16, remote: iwarp.RemoteBuffer{STag: 0x1234, TO: 99, Len: 8}, slots: 3}
	got, err := decodeDesc(d.encode())
	if err != nil || got != d {
		t.Errorf("got %+v, %v; want %+v", got, err, d)
	}
	if _, err := decodeDesc([]byte("MPA ID Req Frame")); err == nil {
		t.Error("a foreign private data was accepted")
	}
	r := report{recvs: 7, seqErr: 1, sys: sysSnapshot{cpuNS: 3, mallocs: 4, rss: 5, base: 6}}
	b := make([]byte, reportLen)
	r.encode(b)
	if got := decodeReport(b); got != r {
		t.Errorf("report: got %+v, want %+v", got, r)
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

// TestProgressLine: the progress line is rewritten in place with the
// label and a rate, and erased at the end; nothing is written when off.
func TestProgressLine(t *testing.T) {
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
	if off.String() != "" {
		t.Errorf("progress off wrote %q", off.String())
	}
}

// TestSlotsSpreadWritesAndReads: with Config.Slots each Write and Read of
// a bandwidth test names the next of that many buffers on both sides, and
// the server registers them all (a remote address past its first buffer
// would otherwise fail the test with a protection error).
func TestSlotsSpreadWritesAndReads(t *testing.T) {
	ep := startServer(t)
	const size, slots = 4096, 4
	for _, op := range []Op{Write, Read} {
		b, err := ep.newBwQP(context.Background(), op, size, 4*slots, slots, true) // posted 4 at a time
		if err != nil {
			t.Fatal(err)
		}
		if err := b.post(slots); err != nil {
			t.Fatal(err)
		}
		for k, w := range b.wrs[:slots] {
			if want := b.c.remote.TO + uint64(k*size); w.Remote.TO != want || w.Remote.Len != size || w.SGL[0] != b.sgls[k][0] {
				t.Errorf("%v WR %d: remote %+v, SGE %+v; want TO %#x, slot %d", op, k, w.Remote, w.SGL[0], want, k)
			}
		}
		if b.c.remote.Len != size*slots {
			t.Errorf("%v: the server registered %d bytes, want %d", op, b.c.remote.Len, size*slots)
		}
		if err := b.run(context.Background(), 4*slots, time.Now().Add(10*time.Second)); err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		b.c.close()
	}
	cfg := &Config{Ops: []Op{Write, Read}, Modes: []string{"bw"}, Sizes: []int{size}, Iters: 40, Depth: 8, QPs: 1, Slots: slots}
	if _, err := RunTests(context.Background(), ep, cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg.Slots, cfg.Sizes = 2, []int{MaxSize}
	if err := cfg.check(false); err == nil {
		t.Error("2 slots of the largest size were accepted")
	}
	if _, err := decodeDesc((&desc{op: Write, size: MaxSize, slots: 2, batch: 1}).encode()); err == nil {
		t.Error("a request for 2 slots of the largest size was accepted")
	}
}
