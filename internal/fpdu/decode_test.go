package fpdu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// TestDecodeFPDUVectors decodes every FPDU of fpdus.tsv and v2.tsv (CRC on,
// no markers): the whole row is one FPDU with a good CRC.
func TestDecodeFPDUVectors(t *testing.T) {
	for _, file := range []string{"fpdus.tsv", "v2.tsv"} {
		for _, v := range loadVectors(t, file, true) {
			f, err := DecodeFPDU(nil, v.Bytes, 0, Options{CRC: true})
			if err != nil {
				t.Errorf("%s %s: %v", file, v.Name, err)
				continue
			}
			if f.Size != len(v.Bytes) || f.Length != len(f.ULPDU) || f.Length != int(binary.BigEndian.Uint16(v.Bytes)) {
				t.Errorf("%s %s: size %d of %d, length %d, ULPDU %d", file, v.Name, f.Size, len(v.Bytes), f.Length, len(f.ULPDU))
			}
			if f.CRC != f.ComputedCRC || f.CRC != binary.LittleEndian.Uint32(v.Bytes[len(v.Bytes)-4:]) {
				t.Errorf("%s %s: CRC %08x computed %08x", file, v.Name, f.CRC, f.ComputedCRC)
			}
			if !bytes.Equal(f.ULPDU, v.Bytes[2:2+f.Length]) {
				t.Errorf("%s %s: ULPDU differs", file, v.Name)
			}
			if f.PadLen != len(v.Bytes)-6-f.Length {
				t.Errorf("%s %s: pad %d", file, v.Name, f.PadLen)
			}
		}
	}
}

// TestDecodeFPDUMarkers decodes the R->I stream of markers.tsv FPDU by FPDU,
// following the stream offset, and checks the annotated marker facts.
func TestDecodeFPDUMarkers(t *testing.T) {
	vs := loadVectors(t, "markers.tsv", true)
	opts := Options{CRC: true, RecvMarkers: true}
	wantMarkers := []int{3, 1, 1}
	wantLen := []int{1514, 118, 418}
	var off uint64
	for i, v := range vs {
		f, err := DecodeFPDU(make([]byte, 0, 2048), v.Bytes, off, opts)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if f.Size != len(v.Bytes) || f.Markers != wantMarkers[i] || f.BadMarkers != 0 || f.Length != wantLen[i] || len(f.ULPDU) != f.Length {
			t.Errorf("%s: %+v", v.Name, f)
		}
		off += uint64(f.Size)
	}
	// First FPDU: markers at 0 (leading), 512 and 1024; stripped, the
	// ULPDU is the Write header and 1500 octets i*7 mod 256.
	f, _ := DecodeFPDU(nil, vs[0].Bytes, 0, opts)
	for i, b := range f.ULPDU[14:] {
		if b != byte(i*7) {
			t.Fatalf("payload octet %d = %#x", i, b)
		}
	}
	// Decoded at a wrong stream offset the markers are misplaced.
	if _, err := DecodeFPDU(nil, vs[1].Bytes, 0, opts); !errors.Is(err, ErrMarker) {
		t.Errorf("wrong offset: %v, want ErrMarker", err)
	}
}

// TestDecodeFPDUErrors checks the framing errors and that the frame still
// holds what was read.
func TestDecodeFPDUErrors(t *testing.T) {
	good := loadVectors(t, "fpdus.tsv", true)[0].Bytes // send-msn1
	bad := bytes.Clone(good)
	bad[5] ^= 1
	f, err := DecodeFPDU(nil, bad, 0, Options{CRC: true})
	if !errors.Is(err, ErrCRC) || f.Size != len(bad) || f.CRC == f.ComputedCRC {
		t.Errorf("flipped bit: %v %+v", err, f)
	}
	if _, err := DecodeFPDU(nil, bad, 0, Options{}); err != nil {
		t.Errorf("CRC off: %v", err)
	}
	short := []byte{0, 2, 0xaa, 0xbb, 0, 0, 0, 0}
	f, err = DecodeFPDU(nil, short, 0, Options{})
	if !errors.Is(err, ErrULPDUTooShort) || f.Length != 2 || len(f.ULPDU) != 2 || f.Size != 8 {
		t.Errorf("short: %v %+v", err, f)
	}
	if _, err := DecodeFPDU(nil, good, 0, Options{MaxULPDU: 20}); !errors.Is(err, ErrULPDUTooLong) {
		t.Errorf("long: %v", err)
	}
	for n := range len(good) {
		f, err := DecodeFPDU(nil, good[:n], 0, Options{CRC: true})
		if !errors.Is(err, ErrTruncated) || f.Size != n {
			t.Fatalf("prefix %d: %v, size %d", n, err, f.Size)
		}
	}
}
