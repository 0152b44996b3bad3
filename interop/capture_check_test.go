// Package interop holds the tests of the interop harness's shell logic
// (the harness itself is interop/*.sh, run as root against Linux siw).
package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runCheck runs one function of capture-check.sh with args and returns
// its output and whether it succeeded. The script and every file argument
// are read here too, so that go test's cache knows them as inputs.
func runCheck(t *testing.T, fn string, args ...string) (string, bool) {
	t.Helper()
	lib, err := os.ReadFile("capture-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args {
		if _, err := os.ReadFile(a); err != nil {
			t.Fatal(err)
		}
	}
	script := string(lib) + "\n\"$@\"\n"
	cmd := exec.Command("bash", append([]string{"-c", script, "capture-check", fn}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		if _, exit := err.(*exec.ExitError); !exit {
			t.Fatalf("bash: %v", err)
		}
	}
	return strings.TrimSpace(string(out)), err == nil
}

// writeInputs writes the classifier's three inputs to files.
func writeInputs(t *testing.T, crcs, events, decode string) (string, string, string) {
	t.Helper()
	dir := t.TempDir()
	names := []string{"crcs", "tcp", "decode"}
	for i, text := range []string{crcs, events, decode} {
		if err := os.WriteFile(filepath.Join(dir, names[i]), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "crcs"), filepath.Join(dir, "tcp"), filepath.Join(dir, "decode")
}

// decodeLine is an FPDU line of `iwarp decode` in frame f with CRC verdict v.
func decodeLine(f, v string) string {
	return "   " + f + " c1 R>I @0      FPDU len=78 T=1 L=1 DV=1 RV=1 RDMA Write(0x0) STag=0x1 TO=0x0 payload=64 pad=0 crc=" + v + "(0x12345678)\n"
}

func TestClassifyTsharkCRCs(t *testing.T) {
	goodDecode := decodeLine("10", "good") + decodeLine("12", "good") + decodeLine("12", "good") + decodeLine("13", "good")
	cases := []struct {
		name                 string
		crcs, events, decode string
		ok                   bool
		says                 []string // in the output, in this order
	}{
		{name: "every CRC good",
			crcs: "10 7777>38718 g\n12 7777>38718 gg\n13 38718>7777 g\n", decode: goodDecode,
			ok: true},
		{name: "bad CRCs after a retransmission, good in our decode",
			crcs:   "10 7777>38718 g\n12 7777>38718 bg\n13 7777>38718 b\n",
			events: "11 7777>38718 retransmission\n", decode: goodDecode,
			ok: true, says: []string{"tshark: 2 good, 2 not good CRCs", "from frame 11: retransmission", "iwarp decode: 4 good, 0 bad", "reassembly artefact"}},
		{name: "several kinds of TCP events, earliest frame named",
			crcs:   "13 7777>38718 b\n",
			events: "12 7777>38718 retransmission,spurious_retransmission\n11 7777>38718 lost_segment\n", decode: goodDecode,
			ok: true, says: []string{"from frame 11: retransmission, spurious retransmission, segment not captured"}},
		{name: "bad CRC with no TCP event",
			crcs: "10 7777>38718 g\n12 7777>38718 b\n", decode: goodDecode,
			says: []string{"1 not good", "frames 12 not explained"}},
		{name: "TCP event in the other direction only",
			crcs:   "12 7777>38718 b\n",
			events: "11 38718>7777 out_of_order\n", decode: goodDecode,
			says: []string{"frames 12 not explained"}},
		{name: "TCP event after the bad CRC",
			crcs:   "10 7777>38718 b\n12 7777>38718 b\n",
			events: "11 7777>38718 retransmission\n", decode: goodDecode,
			says: []string{"frames 10 not explained"}},
		{name: "bad in our decode too, despite a retransmission",
			crcs:   "12 7777>38718 b\n13 7777>38718 b\n",
			events: "11 7777>38718 retransmission\n", decode: decodeLine("12", "good") + decodeLine("13", "bad"),
			says: []string{"bad in iwarp decode too, frames 13"}},
		{name: "tshark checked no CRC",
			decode: goodDecode,
			says:   []string{"tshark checked no CRC"}},
		{name: "long frame lists are cut",
			crcs: "1 1>2 b\n2 1>2 b\n3 1>2 b\n4 1>2 b\n5 1>2 b\n6 1>2 b\n",
			says: []string{"frames 1 2 3 4 5 ... not explained"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			crcs, events, decode := writeInputs(t, c.crcs, c.events, c.decode)
			out, ok := runCheck(t, "classify_tshark_crcs", crcs, events, decode)
			if ok != c.ok {
				t.Errorf("succeeded %v, want %v (output %q)", ok, c.ok, out)
			}
			if len(c.says) == 0 && c.ok && out != "" {
				t.Errorf("printed %q, want nothing", out)
			}
			rest := out
			for _, s := range c.says {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("output %q lacks %q (in order)", out, s)
				}
				rest = rest[i+len(s):]
			}
		})
	}
}

// testdata/retransmitted-segment.pcap is a perftest ib_read_bw session
// (12 Reads of 4 KiB, CRC on) between two `iwarp perf -perftest`
// processes on loopback, with one segment of a Read Response split in
// two whose first half is "lost" and retransmitted after the second: the
// shape of the 2026-11-26 failure. tshark then reports two bad CRCs in
// later frames; `iwarp decode` (recorded beside it) finds every FPDU good.
const retransmitted = "testdata/retransmitted-segment"

func TestClassifyRecordedRetransmission(t *testing.T) {
	out, ok := runCheck(t, "classify_tshark_crcs",
		retransmitted+".tshark-crcs", retransmitted+".tshark-tcp", retransmitted+".decode")
	if !ok || !strings.Contains(out, "2 not good CRCs") || !strings.Contains(out, "retransmission") ||
		!strings.Contains(out, "iwarp decode: 58 good, 0 bad") {
		t.Errorf("succeeded %v, output %q: want a reassembly artefact (2 not good CRCs after a retransmission, 58 good in iwarp decode)", ok, out)
	}
}

// TestTsharkTables checks that tshark_crcs and tshark_tcp_events read
// tshark's output as recorded in testdata (tshark 4.0, Debian 12).
func TestTsharkTables(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed: reading its output needs tshark 4.0 or later in PATH (apt-get install tshark)")
	}
	for _, c := range []struct{ fn, want string }{
		{"tshark_crcs", retransmitted + ".tshark-crcs"},
		{"tshark_tcp_events", retransmitted + ".tshark-tcp"},
	} {
		want, err := os.ReadFile(c.want)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := runCheck(t, c.fn, retransmitted+".pcap")
		if got != strings.TrimSpace(string(want)) {
			t.Errorf("%s: got\n%s\nwant (%s)\n%s", c.fn, got, c.want, want)
		}
	}
}
