package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// The messages of perftest's first connection, byte for byte as two siw
// peers running perftest 4.5 exchanged them
// (interop/captures/siw-siw-perftest-ib_write_bw.pcap, conn 1).
func TestPerftestMessagesMatchCapture(t *testing.T) {
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// frame 8: the version, "6.06" NUL-padded to 16 bytes.
	if got, want := ptVersion(), unhex("362e3036 00000000 00000000 00000000"); !bytes.Equal(got, want) {
		t.Errorf("version % x, want % x", got, want)
	}
	if v, num, err := ptParseVersion(unhex("362e3036000000000000000000000000")); v != "6.06" || num != 6.06 || err != nil {
		t.Errorf("parse version: %q %v %v", v, num, err)
	}
	// frames 11 and 13: cycle buffer 4096, cache line 64, big-endian.
	if got := ptWord(ptCycleBuffer); !bytes.Equal(got, unhex("00001000")) {
		t.Errorf("cycle buffer % x", got)
	}
	if got := ptWord(ptCacheLine); !bytes.Equal(got, unhex("00000040")) {
		t.Errorf("cache line % x", got)
	}
	// frame 15: the MTU enum 3 (1024) as the string "3".
	if got := ptMTU(ptMTUEnum); !bytes.Equal(got, unhex("3300")) {
		t.Errorf("MTU % x", got)
	}
	// frame 29: the server's QP record.
	//   lid 0 | out_reads 1 | qpn 4 | psn 0x662f64 | rkey 0x49607000 | padding |
	//   vaddr 0x0000560f4c534000 | gid 52:54:00:12:34:56:0... | srqn 0 | gid_index 0
	rec := unhex("00000000 00000001 00000004 00662f64 49607000 00000000 0000560f4c534000" +
		"52540012345600000000000000000000 00000000 00000000")
	r, err := ptParseRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	want := ptRecord{OutReads: 1, QPN: 4, PSN: 0x662f64, RKey: 0x49607000, VAddr: 0x560f4c534000,
		GID: [16]byte{0x52, 0x54, 0, 0x12, 0x34, 0x56}}
	if r != want {
		t.Errorf("record %+v, want %+v", r, want)
	}
	if got := r.encode(); !bytes.Equal(got, rec) {
		t.Errorf("record re-encoded\n% x, want\n% x", got, rec)
	}
	// frame 57: the same record with garbage in the padding (it is sent
	// uninitialised) parses the same.
	rec2 := append([]byte(nil), rec...)
	copy(rec2[20:], unhex("57550000"))
	if r2, _ := ptParseRecord(rec2); r2 != want {
		t.Errorf("record with padding garbage: %+v", r2)
	}
	// The ib_write_bw client's report (frames 46, 48, 50, 52, 54): 64
	// bytes, 5 iterations, BW peak 0.33, average 0.15 MB/s, 0.002440 Mpps.
	words := [][]byte{unhex("0000000000000040"), unhex("0000000000000005"), unhex("3fd543a82eec8dc0"),
		unhex("3fc30f30164474a0"), unhex("3f63fc33033ef32c")}
	rep, err := ptParseReport(words)
	if err != nil {
		t.Fatal(err)
	}
	round := func(v float64, d float64) float64 { return math.Round(v*d) / d }
	if rep.Size != 64 || rep.Iters != 5 || round(rep.PeakMBps, 100) != 0.33 || round(rep.AvgMBps, 100) != 0.15 || round(rep.MsgRateMpps, 1e6) != 0.002440 {
		t.Errorf("report %+v", rep)
	}
	for i, w := range rep.words() {
		if !bytes.Equal(w, words[i]) {
			t.Errorf("report word %d re-encoded % x, want % x", i, w, words[i])
		}
	}
	for _, bad := range [][]byte{rec[:55], append(rec, 0)} {
		if _, err := ptParseRecord(bad); err == nil {
			t.Errorf("record of %d bytes accepted", len(bad))
		}
	}
	if _, _, err := ptParseVersion(unhex("7878")); err == nil {
		t.Error("short version accepted")
	}
}

// ptTests are the six perftest programs.
var ptTests = []struct{ op, mode string }{
	{"write", "bw"}, {"send", "bw"}, {"read", "bw"}, {"write", "lat"}, {"send", "lat"}, {"read", "lat"},
}

// ptPolls reports whether a test has this side poll memory the peer
// writes (as perftest does): such a test is a data race by Go's rules
// (the engine places the bytes while the application reads them), so it
// cannot run under the race detector. The interop suite runs them against
// perftest itself.
func ptPolls(op, mode string, iters int) bool {
	return op == "write" && mode == "lat" || op == "send" && mode == "bw" && iters > ptRxDepth
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

// ptCapturedSession runs one test, -n 5 -s 64 with CRC off like the
// recording, our client here (captured to pcap) and our server as a child.
func ptCapturedSession(t *testing.T, op, mode, pcap string) {
	t.Helper()
	cmd, err := perfChildCmd("-perftest", "-child", "-op", op, "-mode", mode, "-size", "64", "-n", "5", "-nocrc")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	var srv strings.Builder
	addr, exited, stop, err := startChildOutput(cmd, &srv)
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
	args := perftestArgs{op: op, mode: mode, size: 64, iters: 5, noCRC: true, set: map[string]bool{"op": true, "mode": true, "size": true, "n": true}}
	cfg, err := args.config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.dial = capt.Dialer((&net.Dialer{}).DialContext)
	var out bytes.Buffer
	err = ptClient(context.Background(), cfg, addr, &out)
	<-exited
	serr := stop()
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
	cmd, err := perfChildCmd("-perftest", "-child", "-op", "write", "-mode", "bw", "-size", "64", "-n", "100")
	if err != nil {
		t.Fatal(err)
	}
	var srvErr strings.Builder
	cmd.Stderr = &srvErr
	var srv strings.Builder
	addr, exited, stop, err := startChildOutput(cmd, &srv)
	if err != nil {
		t.Fatal(err)
	}
	args := perftestArgs{op: "write", mode: "bw", size: 32, iters: 100, set: map[string]bool{"op": true, "mode": true, "size": true, "n": true}}
	cfg, err := args.config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.timeout = 20 * time.Second
	start := time.Now()
	var out bytes.Buffer
	cerr := ptClient(context.Background(), cfg, addr, &out)
	<-exited
	serr := stop()
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
