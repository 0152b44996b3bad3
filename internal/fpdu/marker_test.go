package fpdu

import (
	"encoding/binary"
	"testing"
)

// TestMarkerOracle checks the Writer's marker stream against an
// independent walk of the raw octets, written from docs/spec/mpa.md §3
// alone: at every 512th stream offset 2 zero octets and FPDUPTR (the
// distance back to the ULPDU_Length field, 0 for a marker that leads its
// FPDU); the CRC over the raw octets from the FPDU's first octet to its
// CRC field, every marker included: a leading one, and one due exactly
// where the CRC field would start, which comes before the CRC field
// (RFC 5044 §4.3, §4.4). The lengths are chosen so that every edge case
// occurs.
func TestMarkerOracle(t *testing.T) {
	// skip returns the raw offset after n logical octets from raw offset
	// pos, passing the markers due before each octet.
	skip := func(pos, n int) int {
		for n > 0 {
			if pos%MarkerInterval == 0 {
				pos += MarkerLen
				continue
			}
			pos++
			n--
		}
		return pos
	}
	var lens []int
	end := 0
	add := func(n int) {
		lens = append(lens, n)
		end = skip(skip(end, HeaderLen+n+PadLen(n)), CRCLen)
	}
	for n := 14; n < 1400; n += 7 {
		add(n)
	}
	// Two FPDUs whose CRC field starts at a multiple of 512.
	for range 2 {
		for n := 14; ; n++ {
			if skip(end, HeaderLen+n+PadLen(n))%MarkerInterval == 0 {
				add(n)
				add(100)
				break
			}
		}
	}
	var ulpdus [][]byte
	for i, n := range lens {
		u := make([]byte, n)
		for j := range u {
			u[j] = byte(i + j)
		}
		ulpdus = append(ulpdus, u)
	}
	opts := Options{CRC: true, SendMarkers: true}
	stream := writeStream(t, opts, ulpdus, 5)

	// walk returns the raw offset after n logical octets from raw offset
	// pos, passing markers due before each octet, and the octets.
	walk := func(pos, n int) (int, []byte) {
		var got []byte
		for n > 0 {
			if pos%MarkerInterval == 0 {
				pos += MarkerLen
				continue
			}
			got = append(got, stream[pos])
			pos++
			n--
		}
		return pos, got
	}
	var leadingAtBoundary, beforeCRC int
	s := 0
	for i, u := range ulpdus {
		hdr := s
		if s%MarkerInterval == 0 {
			hdr = s + MarkerLen
			if s > 0 {
				leadingAtBoundary++
			}
		}
		covered := HeaderLen + len(u) + PadLen(len(u))
		crcStart, logical := walk(s, covered)
		if crcStart%MarkerInterval == 0 {
			crcStart += MarkerLen // the marker before the CRC field
			beforeCRC++
		}
		end, trailer := walk(crcStart, CRCLen)
		if int(binary.BigEndian.Uint16(logical)) != len(u) || string(logical[2:2+len(u)]) != string(u) {
			t.Fatalf("FPDU %d at %d: header or ULPDU wrong", i, s)
		}
		if got, want := binary.LittleEndian.Uint32(trailer), CRC32c(stream[s:crcStart]); got != want {
			t.Fatalf("FPDU %d at %d: CRC %08x, oracle %08x", i, s, got, want)
		}
		for m := (s + MarkerInterval - 1) / MarkerInterval * MarkerInterval; m < end; m += MarkerInterval {
			want := m - hdr
			if m == s {
				want = 0
			}
			if stream[m] != 0 || stream[m+1] != 0 || int(binary.BigEndian.Uint16(stream[m+2:])) != want {
				t.Fatalf("FPDU %d: marker at %d = %x, want FPDUPTR %d", i, m, stream[m:m+4], want)
			}
			if m >= crcStart {
				t.Fatalf("FPDU %d: marker at %d inside the CRC field at %d", i, m, crcStart)
			}
		}
		s = end
	}
	if s != len(stream) {
		t.Fatalf("walked %d of %d octets", s, len(stream))
	}
	if leadingAtBoundary == 0 || beforeCRC < 2 {
		t.Errorf("edge cases not all covered: leading %d, before the CRC %d", leadingAtBoundary, beforeCRC)
	}

	// The Reader and DecodeFPDU read the stream back.
	rs := ulpdusOf(t, stream, Options{CRC: true, RecvMarkers: true})
	for seed := range uint64(4) {
		got, err := readFPDUs(NewConn(&memConn{in: stream, split: randomSplit(seed)}, Options{CRC: true, RecvMarkers: true}).Reader(),
			func(m int) int { return m }, false)
		if err == nil || len(got) != len(ulpdus) {
			t.Fatalf("Reader: %d FPDUs, %v", len(got), err)
		}
		sameULPDUs(t, got, rs)
	}
	sameULPDUs(t, rs, ulpdus)
}
