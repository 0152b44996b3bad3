package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/decode"
)

// TestDemoMarkersCRCInTshark records `iwarp demo -markers` (CRC on) with
// -pcap and has Wireshark check it: every FPDU of every connection, in
// both directions, must have a CRC that tshark calls good — including the
// FPDUs whose CRC field follows a marker (RFC 5044 §4.3, §4.4). The capture
// is rewritten with one FPDU per TCP segment first (Wireshark 4.0 places
// markers from segment boundaries; docs/decode.md). Our own decoder must
// find every CRC good too, without tshark.
func TestDemoMarkersCRCInTshark(t *testing.T) {
	file := filepath.Join(t.TempDir(), "demo-markers.pcap")
	code, out, errOut := runCLI(t, "demo", "-markers", "-max", "65536", "-pcap", file)
	if code != exitOK {
		t.Fatalf("demo -markers: exit %d\n%s\n%s", code, out, errOut)
	}
	a, err := capture.ReadFile(file, capture.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	fpdus := 0
	for i, c := range a.Conns() {
		dc := decode.DecodeConn(c, decode.Options{})
		if !dc.Markers[0] || !dc.Markers[1] || dc.CRC != decode.CRCOn {
			t.Fatalf("connection %d: markers %v, CRC %v", i+1, dc.Markers, dc.CRC)
		}
		for _, it := range dc.Items {
			if it.Kind != decode.KindFPDU {
				continue
			}
			fpdus++
			if it.FPDUErr != nil || it.ULPDUErr != nil || !it.CRCGood() || it.FPDU.BadMarkers != 0 {
				t.Errorf("connection %d, FPDU at %d in direction %d: %v / %v, CRC good %v, %d bad markers",
					i+1, it.Off, it.Dir, it.FPDUErr, it.ULPDUErr, it.CRCGood(), it.FPDU.BadMarkers)
			}
		}
	}
	if fpdus < 100 {
		t.Fatalf("only %d FPDUs in the demo's capture", fpdus)
	}
	tshark := needTshark(t)
	one := oneFPDUPerSegment(t, file)
	good, bad := 0, 0
	for frame, vs := range tsharkCRCVerdicts(t, tshark, one) {
		for _, v := range vs {
			if v == "good" {
				good++
				continue
			}
			bad++
			t.Errorf("frame %d: tshark says the CRC is %s", frame, v)
		}
	}
	t.Logf("%d FPDUs; tshark: %d good CRCs, %d bad", fpdus, good, bad)
	if good != fpdus {
		b, _ := os.ReadFile(one)
		t.Errorf("tshark checked %d of %d CRCs (capture %d bytes)", good, fpdus, len(b))
		if d := os.Getenv("IWARP_KEEP_CAPTURE"); d != "" {
			_ = os.WriteFile(d, b, 0o644)
		}
	}
}
