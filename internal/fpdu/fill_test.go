package fpdu

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// TestReaderFillDeadline: an expired read deadline ends Fill without
// consuming anything, and the golden FPDUs that arrive afterwards are read
// intact after a Fill.
func TestReaderFillDeadline(t *testing.T) {
	fp := streamOf(t, "fpdus.tsv")
	want, _ := readFPDUs(NewConn(&memConn{in: fp}, Options{CRC: true}).Reader(), func(m int) int { return m }, false)
	if len(want) < 2 {
		t.Fatalf("golden stream: %d ULPDUs", len(want))
	}
	a, b := tcpPair(t)
	r := NewConn(b, Options{CRC: true}).Reader()
	_ = b.SetReadDeadline(time.Now().Add(-time.Second))
	if err := r.Fill(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Fill with an expired deadline: %v", err)
	}
	_ = b.SetReadDeadline(time.Time{})
	if r.Buffered() != 0 || r.Staged() {
		t.Fatal("a failed Fill staged octets")
	}
	if _, err := a.Write(fp); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := r.Fill(); err != nil || r.Buffered() == 0 {
		t.Fatalf("Fill: %v, %d octets staged", err, r.Buffered())
	}
	got, err := readFPDUs(r, func(m int) int { return m }, false)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("the stream ended with %v", err)
	}
	sameULPDUs(t, got, want)
	if err := r.Fill(); !errors.Is(err, io.EOF) {
		t.Fatalf("Fill at the end of the stream: %v", err)
	}
}

// TestReaderStagedWhole: Staged reports a whole FPDU once every octet of
// it, PAD and CRC included, is staged; with markers it always says no.
func TestReaderStagedWhole(t *testing.T) {
	fp := streamOf(t, "fpdus.tsv")
	first := HeaderLen + int(binary.BigEndian.Uint16(fp))
	first += PadLen(first-HeaderLen) + CRCLen
	for _, c := range []struct {
		n    int
		opts Options
		want bool
	}{
		{1, Options{CRC: true}, false},
		{first - 1, Options{CRC: true}, false},
		{first, Options{CRC: true}, true},
		{len(fp), Options{CRC: true}, true},
		{len(fp), Options{CRC: true, RecvMarkers: true}, false},
	} {
		r := NewConn(&memConn{in: fp[:c.n]}, c.opts).Reader()
		if err := r.Fill(); err != nil {
			t.Fatal(err)
		}
		if got := r.Staged(); got != c.want {
			t.Errorf("%d of %d octets staged (markers %v): Staged %v, want %v", c.n, len(fp), c.opts.RecvMarkers, got, c.want)
		}
	}
}
