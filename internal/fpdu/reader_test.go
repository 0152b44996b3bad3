package fpdu

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// readFPDUs reads FPDUs from r until an error, each ULPDU in pieces of the
// sizes pick chooses (Discard for some when discard is set), and returns
// the ULPDUs and the error that ended the loop.
func readFPDUs(r *Reader, pick func(int) int, discard bool) ([][]byte, error) {
	var out [][]byte
	for {
		n, err := r.Next()
		if err != nil {
			return out, err
		}
		if r.Remaining() != n {
			return out, errors.New("Remaining != ULPDU_Length after Next")
		}
		u := make([]byte, n)
		for off := 0; off < n; {
			k := min(n-off, pick(n-off))
			if discard && k%5 == 1 {
				err = r.Discard(k)
			} else {
				err = r.Read(u[off : off+k])
			}
			if err != nil {
				return out, err
			}
			off += k
		}
		if err := r.End(); err != nil {
			return out, err
		}
		out = append(out, u)
	}
}

// streamOf concatenates the rows of vector files.
func streamOf(t testing.TB, file string) []byte {
	t.Helper()
	var s []byte
	for _, v := range loadVectors(t, file, true) {
		s = append(s, v.Bytes...)
	}
	return s
}

// sameULPDUs fails the test unless got and want hold the same ULPDUs.
func sameULPDUs(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d ULPDUs, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("ULPDU %d differs:\n got %x\nwant %x", i, got[i], want[i])
		}
	}
}

// TestReaderVectors reads the vector streams with random read splits and
// random Read sizes and gets the ULPDUs DecodeFPDU sees.
func TestReaderVectors(t *testing.T) {
	cases := []struct {
		file string
		opts Options
	}{
		{"fpdus.tsv", Options{CRC: true}},
		{"v2.tsv", Options{CRC: true}},
		{"markers.tsv", Options{CRC: true, RecvMarkers: true}},
	}
	for _, c := range cases {
		stream := streamOf(t, c.file)
		want := ulpdusOf(t, stream, c.opts)
		for seed := range uint64(50) {
			mc := &memConn{in: stream, split: randomSplit(seed)}
			pr := rand.New(rand.NewPCG(seed, 1))
			got, err := readFPDUs(NewConn(mc, c.opts).Reader(), func(max int) int { return 1 + pr.IntN(max) }, false)
			if err != io.EOF {
				t.Fatalf("%s seed %d: %v", c.file, seed, err)
			}
			sameULPDUs(t, got, want)
		}
	}
}

// TestReaderErrors: a corrupted CRC, marker, or ULPDU_Length is reported
// with its typed error, and errors are sticky.
func TestReaderErrors(t *testing.T) {
	fp := streamOf(t, "fpdus.tsv")
	mk := streamOf(t, "markers.tsv")
	mut := func(s []byte, i int, v byte) []byte {
		s = bytes.Clone(s)
		s[i] = v
		return s
	}
	cases := []struct {
		name   string
		stream []byte
		opts   Options
		want   error
	}{
		{"crc", mut(fp, 10, fp[10]^0x40), Options{CRC: true}, ErrCRC},
		{"trailer", mut(fp, 0x1f+5, fp[0x1f+5]^1), Options{CRC: true}, ErrCRC},
		{"short", mut(mut(fp, 0, 0), 1, 13), Options{}, ErrULPDUTooShort},
		{"long", fp, Options{MaxULPDU: 0x1e}, ErrULPDUTooLong},
		{"marker reserved covered by the CRC", mut(mk, 513, 1), Options{CRC: true, RecvMarkers: true}, ErrCRC},
		{"marker fpduptr", mut(mk, 515, 0xf8), Options{RecvMarkers: true}, ErrMarker},
		{"leading marker", mut(mk, 3, 4), Options{RecvMarkers: true}, ErrMarker},
		{"no markers expected", mk, Options{CRC: true}, ErrULPDUTooShort},
		{"markers expected", fp, Options{CRC: true, RecvMarkers: true}, ErrMarker},
	}
	for _, c := range cases {
		for seed := range uint64(6) {
			mc := &memConn{in: c.stream}
			if seed > 0 {
				mc.split = randomSplit(seed)
			}
			r := NewConn(mc, c.opts).Reader()
			_, err := readFPDUs(r, func(m int) int { return 1 + int(seed)*m/6 }, seed%2 == 1)
			if !errors.Is(err, c.want) {
				t.Errorf("%s seed %d: %v, want %v", c.name, seed, err, c.want)
			}
			if _, err2 := r.Next(); err2 != err {
				t.Errorf("%s: not sticky: %v", c.name, err2)
			}
		}
	}
	// With CRC off a wrong trailer is never checked.
	r := NewConn(&memConn{in: mut(fp, 0x1f+5, 0)}, Options{}).Reader()
	if _, err := readFPDUs(r, func(m int) int { return m }, false); err != io.EOF {
		t.Errorf("CRC off: %v", err)
	}
}

// TestReaderTruncated: every prefix of the vector streams ends in io.EOF
// at an FPDU boundary and ErrTruncated elsewhere, never a panic.
func TestReaderTruncated(t *testing.T) {
	for _, c := range []struct {
		file string
		opts Options
	}{{"fpdus.tsv", Options{CRC: true}}, {"markers.tsv", Options{CRC: true, RecvMarkers: true}}} {
		stream := streamOf(t, c.file)
		bounds := map[int]bool{0: true}
		var off uint64
		for int(off) < len(stream) {
			f, _ := DecodeFPDU(nil, stream[off:], off, c.opts)
			off += uint64(f.Size)
			bounds[int(off)] = true
		}
		for n := range len(stream) {
			r := NewConn(&memConn{in: stream[:n], split: randomSplit(uint64(n))}, c.opts).Reader()
			_, err := readFPDUs(r, func(m int) int { return m }, true)
			var want error = ErrTruncated
			if bounds[n] {
				want = io.EOF
			}
			if err != want {
				t.Fatalf("%s prefix %d: %v, want %v", c.file, n, err, want)
			}
		}
	}
}

// TestReaderMisuse: calls out of order fail without consuming anything.
func TestReaderMisuse(t *testing.T) {
	fp := streamOf(t, "fpdus.tsv")
	r := NewConn(&memConn{in: fp}, Options{CRC: true}).Reader()
	if err := r.Read(make([]byte, 1)); err != ErrNotInFPDU {
		t.Errorf("Read before Next: %v", err)
	}
	if err := r.End(); err != ErrNotInFPDU {
		t.Errorf("End before Next: %v", err)
	}
	n, err := r.Next()
	if err != nil || n != 0x1f {
		t.Fatalf("Next: %d %v", n, err)
	}
	if _, err := r.Next(); err != ErrFPDUInProgress {
		t.Errorf("Next twice: %v", err)
	}
	if err := r.End(); err != ErrFPDUInProgress {
		t.Errorf("early End: %v", err)
	}
	if err := r.Read(make([]byte, n+1)); err != ErrNotInFPDU {
		t.Errorf("Read past ULPDU: %v", err)
	}
	if err := r.Discard(n + 1); err != ErrNotInFPDU {
		t.Errorf("Discard past ULPDU: %v", err)
	}
	if err := r.Discard(n); err != nil {
		t.Fatal(err)
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	if r.Remaining() != 0 {
		t.Errorf("Remaining %d", r.Remaining())
	}
}

// TestReaderDetectsEveryFlip: with CRC on, flipping any one bit of a
// stream of FPDUs of mixed sizes (PAD and trailer included) is an error,
// whatever the read splits and Read sizes.
func TestReaderDetectsEveryFlip(t *testing.T) {
	var ulpdus [][]byte
	for i, n := range []int{14, 15, 16, 17, 100, 1000, 31, 14} {
		u := make([]byte, n)
		for j := range u {
			u[j] = byte(i*31 + j)
		}
		ulpdus = append(ulpdus, u)
	}
	for _, markers := range []bool{false, true} {
		opts := Options{CRC: true, SendMarkers: markers, RecvMarkers: markers}
		stream := writeStream(t, opts, ulpdus, 3)
		for i := range stream {
			bad := bytes.Clone(stream)
			bad[i] ^= 1 << (i % 8)
			r := NewConn(&memConn{in: bad, split: randomSplit(uint64(i))}, opts).Reader()
			pr := rand.New(rand.NewPCG(uint64(i), 2))
			got, err := readFPDUs(r, func(m int) int { return 1 + pr.IntN(m) }, i%3 == 0)
			if err == io.EOF {
				t.Fatalf("markers=%v: flip at %d undetected (%d FPDUs)", markers, i, len(got))
			}
		}
	}
}

// TestReaderNoProgress: a connection that returns neither octets nor an
// error fails with io.ErrNoProgress instead of spinning.
func TestReaderNoProgress(t *testing.T) {
	r := NewConn(&stuckConn{}, Options{}).Reader()
	if _, err := r.Next(); err != io.ErrNoProgress {
		t.Errorf("Next: %v", err)
	}
}

// TestReaderReleasesStaging: once everything received is consumed the
// Reader holds no staging buffer, so idle connections stay small.
func TestReaderReleasesStaging(t *testing.T) {
	for _, file := range []string{"fpdus.tsv", "markers.tsv"} {
		opts := Options{CRC: true, RecvMarkers: file == "markers.tsv"}
		stream := streamOf(t, file)
		r := NewConn(&memConn{in: stream, split: randomSplit(9)}, opts).Reader()
		for {
			n, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Discard(n); err != nil {
				t.Fatal(err)
			}
			if err := r.End(); err != nil {
				t.Fatal(err)
			}
			if r.Buffered() == 0 && r.st.p != nil {
				t.Fatalf("%s: staging buffer held while empty", file)
			}
		}
		if r.st.p != nil || r.Buffered() != 0 {
			t.Errorf("%s: staging buffer held at the end", file)
		}
	}
}
