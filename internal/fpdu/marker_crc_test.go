package fpdu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// markerBeforeCRCULPDU is a ULPDU of 506 octets: after the stream's leading
// marker (offset 0) and ULPDU_Length (offset 4), it ends at offset 512
// with no PAD, so the CRC field would start at 512, where a marker
// (FPDUPTR 508) is due.
func markerBeforeCRCULPDU() []byte {
	u := make([]byte, 506)
	for i := range u {
		u[i] = byte(i*7 + 1)
	}
	return u
}

// TestMarkerBeforeCRCWriter: the Writer sends the marker due where the CRC
// field would start before the CRC field, and the CRC covers it (RFC 5044
// §4.3, §4.4: every marker inside the FPDU, "before the CRC", is covered).
// Wireshark 4.0 computes the same CRC.
func TestMarkerBeforeCRCWriter(t *testing.T) {
	mc := &memConn{}
	w := NewConn(mc, Options{CRC: true, SendMarkers: true}).Writer()
	if err := w.WriteFPDU(markerBeforeCRCULPDU()); err != nil {
		t.Fatal(err)
	}
	s := mc.out
	if len(s) != 520 || string(s[512:516]) != "\x00\x00\x01\xfc" {
		t.Fatalf("layout: %d octets, octets 512..515 %x (want a marker with FPDUPTR 508)", len(s), s[512:516])
	}
	got := binary.LittleEndian.Uint32(s[516:])
	// 0x700d0e01 is CRC32c of octets 0..515: the leading marker,
	// ULPDU_Length, the ULPDU and the marker before the CRC field.
	if want := CRC32c(s[:516]); got != want || got != 0x700d0e01 {
		t.Fatalf("CRC %08x, want %08x (CRC32c of octets 0..515; 0..511 would be %08x)", got, want, CRC32c(s[:512]))
	}
}

// TestMarkerBeforeCRCReader: the Reader and DecodeFPDU accept that FPDU,
// however it is segmented, and reject it with ErrCRC when the CRC leaves
// the marker out.
func TestMarkerBeforeCRCReader(t *testing.T) {
	mc := &memConn{}
	w := NewConn(mc, Options{CRC: true, SendMarkers: true}).Writer()
	u := markerBeforeCRCULPDU()
	if err := w.WriteFPDU(u); err != nil {
		t.Fatal(err)
	}
	good := mc.out
	opts := Options{CRC: true, RecvMarkers: true}
	f, err := DecodeFPDU(nil, good, 0, opts)
	if err != nil || f.Markers != 2 || f.Size != len(good) || !bytes.Equal(f.ULPDU, u) || f.ComputedCRC != f.CRC {
		t.Fatalf("DecodeFPDU: %v, %+v", err, f)
	}
	bad := bytes.Clone(good)
	binary.LittleEndian.PutUint32(bad[516:], CRC32c(bad[:512])) // the marker left out
	if _, err := DecodeFPDU(nil, bad, 0, opts); !errors.Is(err, ErrCRC) {
		t.Fatalf("DecodeFPDU with the marker left out of the CRC: %v, want ErrCRC", err)
	}
	for seed := range uint64(8) {
		for _, c := range []struct {
			stream []byte
			want   error
		}{{good, nil}, {bad, ErrCRC}} {
			r := NewConn(&memConn{in: c.stream, split: randomSplit(seed)}, opts).Reader()
			got, err := readFPDUs(r, func(m int) int { return 1 + int(seed)*m/8 }, seed%2 == 1)
			if c.want == nil {
				if err == nil || len(got) != 1 || (seed%2 == 0 && !bytes.Equal(got[0], u)) {
					t.Fatalf("seed %d: %d FPDUs, %v", seed, len(got), err)
				}
				continue
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("seed %d, marker left out of the CRC: %v, want %v", seed, err, c.want)
			}
		}
	}
}

// TestMarkerIgnoredBits: a receiver ignores a marker's reserved octets and
// the two low bits of FPDUPTR (RFC 5044 §4.2), which still count in the
// CRC; DecodeFPDU counts such markers as sloppy, not bad.
func TestMarkerIgnoredBits(t *testing.T) {
	mc := &memConn{}
	w := NewConn(mc, Options{SendMarkers: true}).Writer()
	u := markerBeforeCRCULPDU()
	if err := w.WriteFPDU(u); err != nil {
		t.Fatal(err)
	}
	s := mc.out
	s[0], s[513], s[515] = 0x80, 0x01, s[515]|3 // reserved octets, FPDUPTR 508 read as 511
	opts := Options{RecvMarkers: true}
	f, err := DecodeFPDU(nil, s, 0, opts)
	if err != nil || f.Markers != 2 || f.BadMarkers != 0 || f.SloppyMarkers != 2 || !bytes.Equal(f.ULPDU, u) {
		t.Fatalf("DecodeFPDU: %v, %+v", err, f)
	}
	got, err := readFPDUs(NewConn(&memConn{in: s}, opts).Reader(), func(m int) int { return m }, false)
	if err == nil || len(got) != 1 || !bytes.Equal(got[0], u) {
		t.Fatalf("Reader: %d FPDUs, %v", len(got), err)
	}
	// FPDUPTR's other bits are checked.
	s[515] = 0xf8
	if f, err := DecodeFPDU(nil, s, 0, opts); !errors.Is(err, ErrMarker) || f.BadMarkers != 1 {
		t.Fatalf("FPDUPTR 504 for 508: %v, %+v", err, f)
	}
}
