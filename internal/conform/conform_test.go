package conform

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// TestSuiteShape: at least 40 cases, unique names of the form
// "category/what/expected" whose last part states the expected outcome,
// every case has a spec reference, and every category the robustness issue
// lists has a case.
func TestSuiteShape(t *testing.T) {
	all := All()
	if len(all) < 40 {
		t.Fatalf("%d cases, want at least 40", len(all))
	}
	seen := map[string]bool{}
	for _, c := range all {
		if seen[c.Name] {
			t.Errorf("duplicate case %q", c.Name)
		}
		seen[c.Name] = true
		parts := strings.Split(c.Name, "/")
		if len(parts) != 3 {
			t.Errorf("%q: want category/what/expected", c.Name)
			continue
		}
		var want string
		switch c.Want.Kind {
		case WantTerminate:
			want = codeName(c.Want.Code)
		case WantAccept:
			want = "accepted"
		case WantRefused:
			want = "refused"
		case WantClosed:
			want = "closed"
		case WantTeardown:
			want = "torn-down"
		}
		if parts[2] != want {
			t.Errorf("%q: name says %q, the case expects %q", c.Name, parts[2], want)
		}
		if c.Spec == "" || (c.Script == nil) == (c.Raw == nil) {
			t.Errorf("%q: needs a Spec and exactly one of Script and Raw", c.Name)
		}
	}
	for _, must := range []string{"wrong-CRC", "marker-FPDUPTR", "truncated", "DDP-version", "RDMAP-version", "undefined-opcode", "invalid-QN",
		"MSN-out-of-range", "MSN-replayed", "MO-gap", "MO-overlap", "longer-than-buffer", "past-end", "unregistered", "invalidated", "re-keyed",
		"other-PD", "without-write-access", "TO-wrap", "IRD-exceeded", "4GiB", "misaligned", "without-atomic-access", "Immediate-Data-7",
		"not-negotiated", "garbage-Terminate", "no-Request", "private-data-over-limit", "pipelined", "Read-Response-unsolicited",
		"Atomic-Response-unsolicited", "Read-V2-Response-unsolicited", "interleaved", "Write-inside-untagged", "zero-length-Write", "zero-length-unknown",
		"siw-layout", "Request-L0", "Request-MO-8", "Immediate-Data-L0", "ended-by-Send"} {
		found := false
		for name := range seen {
			if strings.Contains(name, must) {
				found = true
			}
		}
		if !found {
			t.Errorf("no case covers %q", must)
		}
	}
}

// TestAdvertGolden: the advertisement is rping's {TO, STag, length}
// big-endian, one entry per slot.
func TestAdvertGolden(t *testing.T) {
	golden := "" +
		"0000000000001000 00012301 00100000" + // main: TO 0x1000, STag 0x12301, 1 MiB
		"0000000000000000 00045602 00001000" // read-only: TO 0, STag 0x45602, 4 KiB
	b, err := hex.DecodeString(strings.ReplaceAll(golden, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	a := ParseAdvert(b)
	want := [2]Region{{STag: 0x12301, TO: 0x1000, Len: 1 << 20}, {STag: 0x45602, TO: 0, Len: 4096}}
	if !a.Have[SlotMain] || !a.Have[SlotReadOnly] || a.Have[SlotOtherPD] || a.Regions[0] != want[0] || a.Regions[1] != want[1] {
		t.Fatalf("parsed %+v", a)
	}
	if got := AppendAdvert(nil, want[:]...); !bytes.Equal(got, b) {
		t.Fatalf("encoded % x, want % x", got, b)
	}
	if ParseAdvert(b[:20]).Have[SlotMain] {
		t.Fatal("a partial entry advertised a region")
	}
}

// TestTerminateULPDUGolden: the predicted Terminate for a Read Request
// error, byte by byte (RFC 5040 §4.8: control, DDP segment length, the DDP
// header and the 28-byte RDMA header).
func TestTerminateULPDUGolden(t *testing.T) {
	rr := ReadRequest(wire.RDMAPVersion1, 1, wire.ReadRequest{SinkSTag: 0x11, SinkTO: 0x22, Size: 16, SrcSTag: 0x33, SrcTO: 0x44})
	got := TerminateULPDU(wire.RDMAPVersion1, rdma.TermRDMAPInvalidSTag, AttachRDMA, rr)
	if len(got) != 18+4+2+18+28 {
		t.Fatalf("length %d", len(got))
	}
	// Untagged DDP header: L=1 DV=1 (0x41), RV 1 opcode 7 (0x47), Invalidate
	// STag 0, QN 2, MSN 1, MO 0.
	if !bytes.Equal(got[:18], mustHex(t, "414700000000000000020000000100000000")) {
		t.Fatalf("DDP header % x", got[:18])
	}
	// RDMAP (0) / remote protection (1) / 0x00, flags M D R (0xe0), then
	// the DDP Segment Length: the whole Read Request, 18 + 28 = 46.
	if !bytes.Equal(got[18:24], mustHex(t, "0100e000002e")) {
		t.Fatalf("control and segment length % x", got[18:24])
	}
	if !bytes.Equal(got[24:], rr.Bytes) {
		t.Fatalf("attached headers % x, want % x", got[24:], rr.Bytes)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzParseAdvert: any private data parses without panicking, and what it
// advertises re-encodes to its prefix.
func FuzzParseAdvert(f *testing.F) {
	f.Add(AppendAdvert(nil, Region{STag: 1, TO: 2, Len: 3}))
	f.Add(make([]byte, 17))
	f.Add(AppendAdvert(nil, make([]Region, 7)...))
	f.Fuzz(func(t *testing.T, pd []byte) {
		a := ParseAdvert(pd)
		var rs []Region
		for i := range a.Regions {
			if a.Have[i] {
				rs = append(rs, a.Regions[i])
			}
		}
		if got := AppendAdvert(nil, rs...); !bytes.HasPrefix(pd, got) {
			t.Fatalf("re-encoded % x is not a prefix of % x", got, pd)
		}
		_ = a.String()
	})
}
