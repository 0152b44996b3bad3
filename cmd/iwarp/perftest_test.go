package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/bench"
	"github.com/goiwarp/iwarp/internal/perftest"
)

// ptTests are the six perftest programs.
var ptTests = []struct{ op, mode string }{
	{"write", "bw"}, {"send", "bw"}, {"read", "bw"}, {"write", "lat"}, {"send", "lat"}, {"read", "lat"},
}

// ptPolls reports whether a test has a side poll memory the peer writes
// (as perftest does): such a test is a data race by Go's rules (the engine
// places the bytes while the application reads them), so it cannot run
// under the race detector. The interop suite runs them against perftest
// itself; .ci/run runs them without -race.
func ptPolls(op, mode string, iters int) bool {
	o, err := perftest.ParseOp(op)
	if err != nil {
		panic(err)
	}
	return (&perftest.Config{Op: o, Lat: mode == "lat", Iters: iters}).PollsPeerMemory()
}

// TestPerftestLoopback runs every test through "iwarp perf -perftest"
// with its all-in-one default (server in a child process): both sides must
// report what they verified.
func TestPerftestLoopback(t *testing.T) {
	for _, tc := range ptTests {
		for _, iters := range []int{300, 1500} {
			name := fmt.Sprintf("%s_%s/n=%d", tc.op, tc.mode, iters)
			t.Run(name, func(t *testing.T) {
				if raceEnabled && ptPolls(tc.op, tc.mode, iters) {
					t.Skip("polls memory the peer writes: a data race by Go's rules (run without -race)")
				}
				size := "4000"
				if tc.mode == "lat" {
					size = "8"
				}
				var out, errb bytes.Buffer
				args := []string{"perf", "-perftest", "-op", tc.op, "-mode", tc.mode, "-size", size, "-n", fmt.Sprint(iters), "-q", "16"}
				if code := runMain(args, &out, &errb); code != 0 {
					t.Fatalf("exit %d\n%s\n%s", code, &out, &errb)
				}
				s := out.String()
				if n := strings.Count(s, "verified: "); n < 1 || n > 2 || strings.Count(s, ": done\n") != 2 {
					t.Errorf("want both sides done and at least one verified line:\n%s", s)
				}
				if !strings.Contains(s, fmt.Sprintf("ib_%s_%s (perftest protocol, peer version 6.06)", tc.op, tc.mode)) {
					t.Errorf("no banner:\n%s", s)
				}
			})
		}
	}
}

// TestPerftestSessionMatchesSiw compares our session with the recorded
// siw↔siw perftest 4.5 session of each program (-n 5 -s 64): on the first
// connection the same sequence of Sends of the same lengths each way, on
// the data connection the same operations of the same lengths (the
// server's credit Writes of ib_send_bw aside: perftest's server writes
// every rx_depth/3 receives, ours after each batch).
func TestPerftestSessionMatchesSiw(t *testing.T) {
	for _, tc := range ptTests {
		t.Run(tc.op+"_"+tc.mode, func(t *testing.T) {
			if raceEnabled && ptPolls(tc.op, tc.mode, 5) {
				t.Skip("polls memory the peer writes: a data race by Go's rules (run without -race)")
			}
			prog := fmt.Sprintf("ib_%s_%s", tc.op, tc.mode)
			want := ptShape(t, filepath.Join("..", "..", "interop", "captures", "siw-siw-perftest-"+prog+".pcap"), tc.op == "send" && tc.mode == "bw")
			pcap := filepath.Join(t.TempDir(), "ours.pcap")
			ptCapturedSession(t, tc.op, tc.mode, pcap)
			got := ptShape(t, pcap, tc.op == "send" && tc.mode == "bw")
			if got != want {
				t.Errorf("our session:\n%s\nsiw's:\n%s", got, want)
			}
		})
	}
}

// ptConfig is the test OP MODE of -n iters -s size, CRC off.
func ptConfig(t *testing.T, op, mode string, size, iters int) *perftest.Config {
	t.Helper()
	o, err := perftest.ParseOp(op)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &perftest.Config{Op: o, Lat: mode == "lat", Size: size, Iters: iters, NoCRC: true}
	cfg.SetDefaults()
	return cfg
}

// ptCapturedSession runs one test, -n 5 -s 64 with CRC off like the
// recording, our client here (captured to pcap) and our server as a child.
func ptCapturedSession(t *testing.T, op, mode, pcap string) {
	t.Helper()
	cfg := ptConfig(t, op, mode, 64, 5)
	cmd, err := perftestChildCmd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var srv strings.Builder
	child, err := bench.StartChild(cmd, &srv)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(pcap)
	if err != nil {
		t.Fatal(err)
	}
	capt, err := iwarp.NewCapture(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dial = capt.Dialer((&net.Dialer{}).DialContext)
	var out bytes.Buffer
	err = perftest.Client(context.Background(), cfg, child.Line, &out)
	<-child.Exited
	serr := child.Stop()
	if cerr := capt.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	f.Close()
	if err != nil {
		t.Fatalf("client: %v\n%s\nserver:\n%s", err, &out, srv.String())
	}
	if serr != nil || !strings.Contains(srv.String(), ": done") {
		t.Fatalf("server did not finish (%v):\n%s", serr, srv.String())
	}
}

// ptShape decodes a perftest session's capture into its shape: per
// connection and direction, the operations and payload lengths in order.
func ptShape(t *testing.T, pcap string, dropCredits bool) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runMain([]string{"decode", "-payload", "0", "-port", "18515", pcap}, &out, &errb); code != 0 {
		t.Fatalf("decode %s: exit %d: %s", pcap, code, &errb)
	}
	seqs := map[string][]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), " summary: ") && strings.Count(sc.Text(), "errors 0") != 2 {
			t.Fatalf("%s decodes with errors: %s", pcap, sc.Text())
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.Contains(sc.Text(), " FPDU ") {
			continue
		}
		conn, dir := f[1], f[2]
		var op []string
		payload := "payload=0"
		for i, x := range f {
			if strings.HasPrefix(x, "RV=") {
				for _, y := range f[i+1:] {
					if strings.Contains(y, "=") {
						break
					}
					op = append(op, y)
				}
			}
			if strings.HasPrefix(x, "payload=") {
				payload = x
			}
		}
		k := conn + " " + dir
		if len(seqs[k]) == 0 && dir == "I>R" && strings.Join(op, " ") == "RDMA Write(0x0)" && payload == "payload=0" {
			continue // the peer-to-peer RTR (RFC 6581) we negotiate with ourselves; siw's perftest did not
		}
		if dropCredits && conn == "c2" && dir == "R>I" && op[0] == "RDMA" {
			continue
		}
		seqs[k] = append(seqs[k], strings.Join(op, " ")+" "+payload)
	}
	var b strings.Builder
	for _, k := range []string{"c1 I>R", "c1 R>I", "c2 I>R", "c2 R>I"} {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(seqs[k], ", "))
	}
	return b.String()
}

// A client run with other parameters than the server is told so, quickly,
// rather than left waiting for bytes that will not come.
func TestPerftestMismatchedSizeIsReported(t *testing.T) {
	cmd, err := perftestChildCmd(ptConfig(t, "write", "bw", 64, 100))
	if err != nil {
		t.Fatal(err)
	}
	var srvErr strings.Builder
	cmd.Stderr = &srvErr
	child, err := bench.StartChild(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ptConfig(t, "write", "bw", 32, 100)
	cfg.Timeout = 20 * time.Second
	start := time.Now()
	var out bytes.Buffer
	cerr := perftest.Client(context.Background(), cfg, child.Line, &out)
	<-child.Exited
	serr := child.Stop()
	if cerr == nil || serr == nil {
		t.Fatalf("client error %v, server exit %v: want both to fail", cerr, serr)
	}
	if !strings.Contains(srvErr.String(), "run both with the same -size and -n") {
		t.Errorf("server said %q", srvErr.String())
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
}
