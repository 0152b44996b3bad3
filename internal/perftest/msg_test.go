package perftest

import (
	"bytes"
	"encoding/hex"
	"math"
	"strings"
	"testing"
)

// The messages of perftest's first connection, byte for byte as two siw
// peers running perftest 4.5 exchanged them
// (interop/captures/siw-siw-perftest-ib_write_bw.pcap, conn 1).
func TestMessagesMatchCapture(t *testing.T) {
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// frame 8: the version, "6.06" NUL-padded to 16 bytes.
	if got, want := versionMsg(), unhex("362e3036 00000000 00000000 00000000"); !bytes.Equal(got, want) {
		t.Errorf("version % x, want % x", got, want)
	}
	if v, num, err := parseVersion(unhex("362e3036000000000000000000000000")); v != "6.06" || num != 6.06 || err != nil {
		t.Errorf("parse version: %q %v %v", v, num, err)
	}
	// frames 11 and 13: cycle buffer 4096, cache line 64, big-endian.
	if got := word(cycleBuffer); !bytes.Equal(got, unhex("00001000")) {
		t.Errorf("cycle buffer % x", got)
	}
	if got := word(cacheLine); !bytes.Equal(got, unhex("00000040")) {
		t.Errorf("cache line % x", got)
	}
	// frame 15: the MTU enum 3 (1024) as the string "3".
	if got := mtuMsg(mtuEnum); !bytes.Equal(got, unhex("3300")) {
		t.Errorf("MTU % x", got)
	}
	// frame 29: the server's QP record.
	//   lid 0 | out_reads 1 | qpn 4 | psn 0x662f64 | rkey 0x49607000 | padding |
	//   vaddr 0x0000560f4c534000 | gid 52:54:00:12:34:56:0... | srqn 0 | gid_index 0
	rec := unhex("00000000 00000001 00000004 00662f64 49607000 00000000 0000560f4c534000" +
		"52540012345600000000000000000000 00000000 00000000")
	r, err := parseRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	want := record{OutReads: 1, QPN: 4, PSN: 0x662f64, RKey: 0x49607000, VAddr: 0x560f4c534000,
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
	if r2, _ := parseRecord(rec2); r2 != want {
		t.Errorf("record with padding garbage: %+v", r2)
	}
	// The ib_write_bw client's report (frames 46, 48, 50, 52, 54): 64
	// bytes, 5 iterations, BW peak 0.33, average 0.15 MB/s, 0.002440 Mpps.
	words := [][]byte{unhex("0000000000000040"), unhex("0000000000000005"), unhex("3fd543a82eec8dc0"),
		unhex("3fc30f30164474a0"), unhex("3f63fc33033ef32c")}
	rep, err := parseReport(words)
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
		if _, err := parseRecord(bad); err == nil {
			t.Errorf("record of %d bytes accepted", len(bad))
		}
	}
	if _, _, err := parseVersion(unhex("7878")); err == nil {
		t.Error("short version accepted")
	}
}
