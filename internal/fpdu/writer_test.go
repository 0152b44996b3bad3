package fpdu

import (
	"bytes"
	"errors"
	"testing"
)

// ulpdusOf decodes a stream of FPDUs (as the sender's stream from offset
// 0) into their ULPDUs.
func ulpdusOf(t *testing.T, stream []byte, opts Options) [][]byte {
	t.Helper()
	var out [][]byte
	var off uint64
	for len(stream) > 0 {
		f, err := DecodeFPDU(nil, stream, off, opts)
		if err != nil {
			t.Fatalf("decode at %d: %v", off, err)
		}
		out = append(out, bytes.Clone(f.ULPDU))
		stream = stream[f.Size:]
		off += uint64(f.Size)
	}
	return out
}

// writeStream frames ulpdus with a Writer over memory: each ULPDU as a
// 14-octet header and the rest split into pieces at the given cut points,
// flushing after every flushEvery FPDUs.
func writeStream(t *testing.T, opts Options, ulpdus [][]byte, flushEvery int) []byte {
	t.Helper()
	mc := &memConn{}
	w := NewConn(mc, opts).Writer()
	for i, u := range ulpdus {
		rest := u[14:]
		third := len(rest) / 3
		if err := w.Append(u[:14], rest[:third], nil, rest[third:2*third], rest[2*third:]); err != nil {
			t.Fatal(err)
		}
		if (i+1)%flushEvery == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.Buffered() != 0 {
		t.Fatalf("Buffered after Flush = %d", w.Buffered())
	}
	return mc.out
}

// TestWriterVectors: the Writer reproduces fpdus.tsv and v2.tsv FPDU by
// FPDU (CRC on, no markers), whatever the batching.
func TestWriterVectors(t *testing.T) {
	for _, file := range []string{"fpdus.tsv", "v2.tsv"} {
		vs := loadVectors(t, file, true)
		var want []byte
		var ulpdus [][]byte
		for _, v := range vs {
			want = append(want, v.Bytes...)
			ulpdus = append(ulpdus, ulpdusOf(t, v.Bytes, Options{CRC: true})...)
		}
		for _, every := range []int{1, 3, 100} {
			got := writeStream(t, Options{CRC: true}, ulpdus, every)
			if !bytes.Equal(got, want) {
				t.Errorf("%s flush every %d: stream differs\n got %x\nwant %x", file, every, got, want)
			}
		}
	}
}

// TestWriterMarkersVector: the Writer produces the R->I stream of
// markers.tsv byte for byte (CRC on, markers on).
func TestWriterMarkersVector(t *testing.T) {
	opts := Options{CRC: true, SendMarkers: true, RecvMarkers: true}
	vs := loadVectors(t, "markers.tsv", true)
	var want []byte
	for _, v := range vs {
		want = append(want, v.Bytes...)
	}
	ulpdus := ulpdusOf(t, want, opts)
	if len(ulpdus) != 3 {
		t.Fatalf("%d ULPDUs", len(ulpdus))
	}
	for _, every := range []int{1, 2, 3} {
		if got := writeStream(t, opts, ulpdus, every); !bytes.Equal(got, want) {
			t.Errorf("flush every %d: stream differs\n got %x\nwant %x", every, got, want)
		}
	}
}

// TestWriterCRCOff: without CRC the trailer is four zero octets.
func TestWriterCRCOff(t *testing.T) {
	v := loadVectors(t, "fpdus.tsv", true)[0].Bytes
	got := writeStream(t, Options{}, ulpdusOf(t, v, Options{CRC: true}), 1)
	want := bytes.Clone(v)
	copy(want[len(want)-4:], []byte{0, 0, 0, 0})
	if !bytes.Equal(got, want) {
		t.Errorf("got %x\nwant %x", got, want)
	}
}

// TestWriterLimits: ULPDUs outside MinULPDU..65535 are refused and nothing
// is queued.
func TestWriterLimits(t *testing.T) {
	mc := &memConn{}
	w := NewConn(mc, Options{}).Writer()
	if err := w.Append(make([]byte, 13)); !errors.Is(err, ErrSendULPDUTooShort) {
		t.Errorf("13 octets: %v", err)
	}
	if err := w.Append(make([]byte, 14), make([]byte, 65522)); !errors.Is(err, ErrSendULPDUTooLong) {
		t.Errorf("65536 octets: %v", err)
	}
	if err := w.Append(make([]byte, 14), make([]byte, 65521)); err != nil {
		t.Errorf("65535 octets: %v", err)
	}
	if err := w.Flush(); err != nil || len(mc.out) != 2+65535+3+4 {
		t.Errorf("flush: %v, %d octets", err, len(mc.out))
	}
}
