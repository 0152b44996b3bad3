package main

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/vectors"
)

// The Lua dissector contrib/wireshark/iwarp.lua (docs/decode.md, "Wireshark
// plugin"), checked with tshark: on captures of `iwarp demo` (CRC on and
// off, markers on), on the siw captures of interop/captures and on the
// vector files sent through small TCP segments and retransmitted, every MPA
// frame and FPDU `iwarp decode` finds must show in tshark with the same
// fields, in the same frame, in the same order, with an expert error where
// and only where `iwarp decode` reports one, no malformed mark, no Lua error
// and no item of Wireshark's built-in iWARP dissectors. TCP's own analysis
// (retransmissions and the like) is not looked at: only the plugin's items
// count.

// luaPlugin is the dissector under test.
const luaPlugin = "../../contrib/wireshark/iwarp.lua"

// luaCase is one capture to check.
type luaCase struct {
	name string
	file string
	// tshark holds extra tshark options: the siw captures on port 7000,
	// which Wireshark gives to its Gryphon dissector, are decoded as
	// iwarp (Decode As) since TCP tries port dissectors before heuristics.
	tshark []string
	// minFPDUs is the least number of FPDUs the capture must hold.
	minFPDUs int
}

func TestLuaDissectorMatchesDecode(t *testing.T) {
	tshark := needTsharkLua(t)
	dir := t.TempDir()
	var cases []luaCase
	for _, v := range []struct {
		name string
		args []string
	}{
		{"demo", nil},
		{"demo-nocrc", []string{"-nocrc"}},
		{"demo-markers", []string{"-markers"}},
	} {
		file := filepath.Join(dir, v.name+".pcap")
		args := append([]string{"demo", "-max", "65536", "-pcap", file}, v.args...)
		if code, out, errOut := runCLI(t, args...); code != exitOK {
			t.Fatalf("iwarp %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
		cases = append(cases, luaCase{name: v.name, file: file, minFPDUs: 300})
	}
	for _, f := range siwCaptures(t) {
		cases = append(cases, luaCase{name: filepath.Base(f), file: f})
	}
	for _, f := range vectors.FrameFiles {
		for _, retx := range []bool{false, true} {
			name := strings.TrimSuffix(f, ".tsv") + "-mss100"
			if retx {
				name += "-retransmit"
			}
			file := filepath.Join(dir, name+".pcap")
			writeVectorPcap(t, f, file, false, retx, 100)
			cases = append(cases, luaCase{name: name, file: file, minFPDUs: len(vectorFrames(t, f)) - 2})
		}
	}
	reuse := filepath.Join(dir, "fpdus-port-reuse.pcap")
	writeReusedTuplePcap(t, reuse)
	cases = append(cases,
		luaCase{name: "fpdus-port-reuse-decode-as", file: reuse, minFPDUs: 2 * (len(vectorFrames(t, "fpdus.tsv")) - 2)},
		luaCase{name: "fpdus-port-reuse-heuristic", file: reuse, minFPDUs: 2 * (len(vectorFrames(t, "fpdus.tsv")) - 2),
			tshark: []string{"-o", "tcp.try_heuristic_first:TRUE"}})
	for _, c := range cases {
		if c.tshark == nil && capturePort(t, c.file) == 7000 {
			c.tshark = []string{"-d", "tcp.port==7000,iwarp"}
		}
		t.Run(c.name, func(t *testing.T) { checkLuaCase(t, tshark, c) })
	}
}

// siwCaptures returns the captures of interop/captures that hold an MPA
// startup.
func siwCaptures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.pcap", "*.pcapng"} {
		m, _ := filepath.Glob(filepath.Join(captureDir, pat))
		files = append(files, m...)
	}
	slices.Sort(files)
	var out []string
	for _, f := range files {
		if decodeRecords(t, f).count() > 0 {
			out = append(out, f)
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d captures with iWARP traffic in %s", len(out), captureDir)
	}
	return out
}

// writeReusedTuplePcap writes two connections carrying fpdus.tsv, one
// after the other between the same endpoints (port 7000), with initial
// sequence numbers of their own as a real reuse has.
func writeReusedTuplePcap(t *testing.T, out string) {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewPcapWriter(&buf, capture.LinkEthernet)
	if err != nil {
		t.Fatal(err)
	}
	sw := &segWriter{w: w, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ends := [2]netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:40001"), netip.MustParseAddrPort("192.0.2.2:7000")}
	for _, isn := range [][2]uint32{{0x10000000, 0xF0000000}, {0x20000000, 0xE0000000}} {
		c := &segConn{sw: sw, ends: ends, isn: isn}
		sw.write(t, capture.TCPFrame{Src: ends[0], Dst: ends[1], Seq: isn[0], Flags: capture.TCPSyn})
		sw.write(t, capture.TCPFrame{Src: ends[1], Dst: ends[0], Seq: isn[1], Ack: isn[0] + 1, Flags: capture.TCPSyn | capture.TCPAck})
		sw.write(t, capture.TCPFrame{Src: ends[0], Dst: ends[1], Seq: isn[0] + 1, Ack: isn[1] + 1, Flags: capture.TCPAck})
		for _, f := range vectorFrames(t, "fpdus.tsv") {
			side := 1
			if f.Initiator() {
				side = 0
			}
			c.send(t, side, uint64(c.next[side]), f.Bytes)
		}
		c.close(t)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// capturePort returns the server port of a capture's first connection.
func capturePort(t *testing.T, file string) uint16 {
	t.Helper()
	a, err := capture.ReadFile(file, capture.Limits{})
	if err != nil || len(a.Conns()) == 0 {
		t.Fatalf("%s: %v, %d connections", file, err, len(a.Conns()))
	}
	c := a.Conns()[0]
	return min(c.A.Port(), c.B.Port())
}

// checkLuaCase compares tshark's view of one capture, in one pass and in
// two, with `iwarp decode`'s.
func checkLuaCase(t *testing.T, tshark string, c luaCase) {
	want := decodeRecords(t, c.file)
	fpdus := 0
	for _, rs := range want {
		for _, r := range rs {
			if strings.Contains(r, "kind=FPDU") {
				fpdus++
			}
		}
	}
	if fpdus < c.minFPDUs {
		t.Fatalf("iwarp decode finds %d FPDUs, want at least %d", fpdus, c.minFPDUs)
	}
	for _, twoPass := range []bool{false, true} {
		got := tsharkLuaPDML(t, tshark, c.file, twoPass, c.tshark...)
		for frame, ps := range got.problems {
			t.Errorf("two passes %v, frame %d: %s", twoPass, frame, strings.Join(ps, "; "))
		}
		frames := map[int]bool{}
		for f := range want {
			frames[f] = true
		}
		for f := range got.records {
			frames[f] = true
		}
		bad := 0
		for _, f := range slices.Sorted(func(yield func(int) bool) {
			for f := range frames {
				if !yield(f) {
					return
				}
			}
		}) {
			if !slices.Equal(want[f], got.records[f]) {
				if bad++; bad <= 5 {
					t.Errorf("two passes %v, frame %d:\n iwarp decode %q\n tshark       %q", twoPass, f, want[f], got.records[f])
				}
			}
		}
		if bad > 5 {
			t.Errorf("two passes %v: %d frames differ in all", twoPass, bad)
		}
		if bad == 0 && len(got.problems) == 0 {
			t.Logf("two passes %v: %d MPA frames and FPDUs alike in %d frames (%d FPDUs)", twoPass, want.count(), len(want), fpdus)
		}
	}
}

// TestLuaDissectorLeavesOtherTCP: connections that do not start with an
// MPA key keep their usual dissectors, and the MPA connection beside them
// is the plugin's.
func TestLuaDissectorLeavesOtherTCP(t *testing.T) {
	tshark := needTsharkLua(t)
	var buf bytes.Buffer
	w, err := capture.NewPcapWriter(&buf, capture.LinkEthernet)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	flow := func(client, server string, msgs ...[]byte) {
		fl := &capture.Flow{W: w, Time: at, Client: netip.MustParseAddrPort(client),
			Server: netip.MustParseAddrPort(server)}
		must(fl.Open())
		for i, m := range msgs {
			must(fl.Send(i%2, m))
		}
		must(fl.Close())
	}
	flow("192.0.2.1:40001", "192.0.2.2:80", []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		[]byte("HTTP/1.1 204 No Content\r\n\r\n"))
	// An MPA key at the start of a segment, not of the stream: Wireshark's
	// own MPA heuristic (switched off below) would take it.
	flow("192.0.2.1:40002", "192.0.2.2:7100", []byte("hello\n"), []byte("hi\n"),
		[]byte("MPA ID Req Frame, not at the start\n"))
	var mpaFrames [][]byte
	for _, f := range vectorFrames(t, "fpdus.tsv") {
		mpaFrames = append(mpaFrames, f.Bytes)
	}
	flow("192.0.2.1:40003", "192.0.2.2:7200", mpaFrames[0], mpaFrames[1], mpaFrames[2])
	file := filepath.Join(t.TempDir(), "mixed.pcap")
	must(os.WriteFile(file, buf.Bytes(), 0o644))

	v := tsharkLuaPDML(t, tshark, file, false, "--disable-heuristic", "iwarp_mpa_tcp")
	for frame, ps := range v.problems {
		t.Errorf("frame %d: %s", frame, strings.Join(ps, "; "))
	}
	if n := v.records.count(); n != 3 {
		t.Errorf("%d iwarp items, want 3 (the MPA Request, the Reply and one FPDU): %v", n, v.records)
	}
	out, err := runTshark(tshark, "-r", file, "-X", "lua_script:"+luaPlugin, "-Y", "http", "-T", "fields", "-e", "frame.number")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(out)); n != 2 {
		t.Errorf("%d HTTP frames with the plugin loaded, want 2", n)
	}
	out, err = runTshark(tshark, "-r", file, "-X", "lua_script:"+luaPlugin, "-Y", "iwarp && tcp.port != 7200",
		"-T", "fields", "-e", "frame.number")
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(out); len(f) != 0 {
		t.Errorf("frames %v of other connections dissected as iwarp", f)
	}
}
