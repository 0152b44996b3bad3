package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/decode"
)

// TestDemoMarkersCRCInTshark records `iwarp demo -markers` (CRC on) with
// -pcap and has Wireshark check it: every FPDU of every connection, in
// both directions, must have a CRC that tshark calls good — including the
// FPDUs whose CRC field follows a marker (RFC 5044 §4.3, §4.4). Our own
// decoder must find every CRC good too, without tshark. The capture is
// rewritten for Wireshark 4.0 first (oneFPDUPerSegment): one FPDU per TCP
// segment, and the FPDUs whose markers Wireshark would miscount where they
// are (those ending on a marker position with markers inside) each in a
// connection of its own (docs/decode.md, "Wireshark 4.0 and markers").
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
	rw := oneFPDUPerSegment(t, file)
	verdicts := tsharkCRCVerdicts(t, tshark, rw.File)
	good, bad := 0, 0
	for frame, vs := range verdicts {
		for _, v := range vs {
			if v != "good" {
				bad++
				t.Errorf("frame %d: tshark says the CRC is %s", frame, v)
			}
		}
		switch {
		case rw.FPDUs[frame] && slices.Equal(vs, []string{"good"}):
			good++
		case !rw.FPDUs[frame] && !rw.Anchors[frame]:
			t.Errorf("frame %d: tshark found CRCs %v where the rewrite put no FPDU", frame, vs)
		}
	}
	var unchecked []int
	for frame := range rw.FPDUs {
		if len(verdicts[frame]) == 0 {
			unchecked = append(unchecked, frame)
		}
	}
	if len(unchecked) > 0 {
		slices.Sort(unchecked)
		t.Errorf("tshark checked no CRC in %d frames with an FPDU, the first %d", len(unchecked), unchecked[0])
	}
	t.Logf("%d FPDUs (%d checked in a connection of their own); tshark: %d good CRCs, %d bad", fpdus, rw.Moved, good, bad)
	if good != fpdus || len(rw.FPDUs) != fpdus {
		t.Errorf("tshark found %d of %d CRCs good (%d FPDUs in the rewrite)", good, fpdus, len(rw.FPDUs))
	}
	if keep := os.Getenv("IWARP_KEEP_CAPTURE"); keep != "" {
		b, err := os.ReadFile(rw.File)
		if err == nil {
			err = os.WriteFile(keep, b, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}
}
