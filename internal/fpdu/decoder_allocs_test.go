package fpdu

import (
	"fmt"
	"testing"
)

// decFeeder runs a Decoder over a prepared stream, a chunk at a time,
// placing every ULPDU into one destination buffer, without allocating.
type decFeeder struct {
	d      *Decoder
	stream []byte
	dst    []byte
	iov    [][]byte
	bufs   bool
	sgl    [][]byte // when set, PlaceV into these pieces of dst
	fpdus  int
	err    error
}

// feed gives the Decoder the next n octets of the stream (in reads as
// large as it asks for) and handles every FPDU they complete.
func (f *decFeeder) feed(n int) {
	chunk := f.stream[:min(n, len(f.stream))]
	f.stream = f.stream[len(chunk):]
	for f.err == nil {
		switch f.d.Step() {
		case NeedBytes:
			if len(chunk) == 0 {
				return
			}
			f.iov = f.iov[:0]
			if f.bufs {
				f.iov = f.d.Bufs(f.iov)
			} else {
				f.iov = append(f.iov, f.d.Buf())
			}
			k := 0
			for _, b := range f.iov {
				k += copy(b, chunk[k:])
			}
			chunk = chunk[k:]
			f.d.Advance(k)
		case NeedPlace:
			rest := f.d.ULPDULen() - len(f.d.Header())
			if f.sgl != nil {
				third := rest / 3
				f.sgl[0], f.sgl[1], f.sgl[2] = f.dst[:third], f.dst[third:2*third], f.dst[2*third:rest]
				f.d.PlaceV(f.sgl)
			} else {
				f.d.Place(f.dst[:rest])
			}
		case FPDUDone:
			f.err = f.d.Err()
			f.fpdus++
			f.d.Next()
		}
	}
}

// encodeRun returns the stream of n FPDUs of ulpdu octets each, framed
// with opts from stream offset 0.
func encodeRun(t testing.TB, opts Options, ulpdu, n int) []byte {
	e := NewEncoder(Options{CRC: opts.CRC, SendMarkers: opts.RecvMarkers}, 0)
	hdr, payload := make([]byte, 14), make([]byte, ulpdu-14)
	var s []byte
	for range n {
		if err := e.Append(hdr, payload); err != nil {
			t.Fatal(err)
		}
		for _, b := range e.Bufs(nil) {
			s = append(s, b...)
		}
		e.Done(e.Buffered())
	}
	return s
}

// TestDecoderAllocs: in steady state the Decoder allocates nothing: small
// FPDUs staged many per Buf, and large FPDUs placed into a destination
// (with Buf or Bufs, in one piece or three with PlaceV), CRC and markers
// on and off.
func TestDecoderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	const runs = 100
	for _, c := range []struct {
		ulpdu, perRun int
		bufs, sgl     bool
	}{{32, 16 << 10, false, false}, {60000, 60016, false, false}, {60000, 60016, true, false}, {60000, 60016, true, true}} {
		for _, crc := range []bool{false, true} {
			for _, markers := range []bool{false, true} {
				opts := Options{CRC: crc, RecvMarkers: markers}
				name := fmt.Sprintf("ULPDU %d, Bufs %v, PlaceV %v, CRC %v, markers %v", c.ulpdu, c.bufs, c.sgl, crc, markers)
				s := encodeRun(t, opts, c.ulpdu, (runs+3)*c.perRun/c.ulpdu+1)
				f := &decFeeder{d: NewDecoder(opts, 0), stream: s, dst: make([]byte, MaxULPDULen), bufs: c.bufs}
				if c.sgl {
					f.sgl = make([][]byte, 3)
				}
				f.feed(c.perRun)
				allocs := testing.AllocsPerRun(runs, func() { f.feed(c.perRun) })
				if f.err != nil || f.fpdus < runs*c.perRun/(c.ulpdu+8) {
					t.Fatalf("%s: %d FPDUs, %v", name, f.fpdus, f.err)
				}
				if allocs != 0 {
					t.Errorf("%s: %v allocations per run", name, allocs)
				}
			}
		}
	}
}

// TestEncoderAllocs: an Append, Bufs, Done cycle (a header, a copied and a
// referenced piece; the write in two parts) allocates nothing in steady
// state, nor does a queue that never drains completely.
func TestEncoderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	hdr, small, large := make([]byte, 18), make([]byte, 64), make([]byte, 4000)
	for _, crc := range []bool{false, true} {
		for _, markers := range []bool{false, true} {
			e := NewEncoder(Options{CRC: crc, SendMarkers: markers}, 0)
			iov := make([][]byte, 0, 64)
			var err error
			cycle := func() {
				for range 8 {
					if err == nil {
						err = e.Append(hdr, small, large)
					}
				}
				iov = e.Bufs(iov[:0])
				n := e.Buffered()
				e.Done(n / 3)
				iov = e.Bufs(iov[:0])
				e.Done(e.Buffered())
			}
			step := 0
			backlog := func() { // keep about half an FPDU queued
				step++
				if err == nil && step%2 == 0 {
					err = e.AppendCopy(hdr, large, small)
				} else if err == nil {
					err = e.Append(hdr, large, small)
				}
				iov = e.Bufs(iov[:0])
				e.Done(e.Buffered() - 2100)
			}
			cycle()
			if a := testing.AllocsPerRun(200, cycle); a != 0 || err != nil {
				t.Errorf("CRC %v, markers %v: %v allocations per cycle (%v)", crc, markers, a, err)
			}
			for range 50 {
				backlog()
			}
			if a := testing.AllocsPerRun(200, backlog); a != 0 || err != nil || e.Buffered() > 1<<20 {
				t.Errorf("CRC %v, markers %v: %v allocations per backlog step, %d octets queued (%v)", crc, markers, a, e.Buffered(), err)
			}
		}
	}
}
