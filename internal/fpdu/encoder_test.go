package fpdu

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/goiwarp/iwarp/internal/wire"
)

// TestEncoderDifferential: for the seeded random streams of the
// differential test, the Encoder (header and payload pieces cut at random,
// by reference or copied, drained by random partial writes, from stream
// offset 0 or after a prefix of FPDUs, markers and CRC on and off) produces
// exactly the reference framer's octets and the Writer's, Done counts each
// FPDU once when its last octet is consumed, and the reference deframer
// accepts the result.
func TestEncoderDifferential(t *testing.T) {
	diffSeeds(t, "TestEncoderDifferential", encDiffOne)
}

// encPieces cuts u into a header and payload pieces at random (around
// CopyMax too) and says whether to append by copy.
func encPieces(rng *rand.Rand, u []byte) (hdr []byte, pieces [][]byte, copyAll bool) {
	h := rng.IntN(min(len(u), 30) + 1)
	rest := u[h:]
	for len(rest) > 0 && len(pieces) < 4 {
		k := rng.IntN(len(rest) + 1)
		if rng.IntN(3) == 0 {
			k = min(len(rest), rng.IntN(300))
		}
		pieces = append(pieces, rest[:k])
		rest = rest[k:]
	}
	return u[:h], append(pieces, rest), rng.IntN(4) == 0
}

// encDrain writes up to limit octets of what e holds (the first iovecs,
// the last one maybe in part) to out, calls Done, and returns out and the
// number of FPDUs Done reported.
func encDrain(e *Encoder, out []byte, limit int) ([]byte, int) {
	n := 0
	for _, b := range e.Bufs(nil) {
		k := min(len(b), limit-n)
		out = append(out, b[:k]...)
		n += k
	}
	return out, e.Done(n)
}

func encDiffOne(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x656e63))
	markers, crc := rng.IntN(4) != 0, rng.IntN(2) == 0
	var ref []byte
	if rng.IntN(3) == 0 { // a non-zero start offset
		for range 1 + rng.IntN(3) {
			ref = refFrame(ref, make([]byte, 14+rng.IntN(1000)), markers, crc)
		}
	}
	off := len(ref)
	ulpdus := diffULPDUs(rng, markers)
	var ends []int // stream octets after each FPDU, counted from off
	for _, u := range ulpdus {
		ref = refFrame(ref, u, markers, crc)
		ends = append(ends, len(ref)-off)
	}
	opts := Options{CRC: crc, SendMarkers: markers}
	mc := &memConn{}
	w := NewConn(mc, opts).Writer()
	w.m = newMarkerStream(markers, uint64(off))
	e := NewEncoder(opts, uint64(off))
	name := fmt.Sprintf("seed %d (markers %v, CRC %v, offset %d, %d FPDUs)", seed, markers, crc, off, len(ulpdus))
	var out []byte
	completed, appended := 0, 0
	check := func(got int) {
		want := 0
		for _, end := range ends {
			if end <= len(out) {
				want++
			}
		}
		completed += got
		if completed != want || e.Pending() != appended-completed || e.Buffered() != ends[appended-1]-len(out) {
			t.Fatalf("%s: after %d octets Done reported %d FPDUs in all, want %d (Pending %d, Buffered %d)",
				name, len(out), completed, want, e.Pending(), e.Buffered())
		}
	}
	for _, u := range ulpdus {
		hdr, pieces, copyAll := encPieces(rng, u)
		var werr, eerr error
		if copyAll {
			werr, eerr = w.AppendCopy(hdr, pieces...), e.AppendCopy(hdr, pieces...)
		} else {
			werr, eerr = w.Append(hdr, pieces...), e.Append(hdr, pieces...)
		}
		if werr != nil || eerr != nil {
			t.Fatalf("%s: Append: Writer %v, Encoder %v", name, werr, eerr)
		}
		appended++
		if rng.IntN(2) == 0 {
			var got int
			out, got = encDrain(e, out, rng.IntN(e.Buffered()+1))
			check(got)
		}
	}
	for e.Buffered() > 0 {
		var got int
		out, got = encDrain(e, out, 1+rng.IntN(e.Buffered()))
		check(got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, ref[off:]) || !bytes.Equal(out, mc.out) {
		t.Fatalf("%s: the Encoder's %d octets differ from the reference's %d (at %d) or the Writer's %d (at %d)",
			name, len(out), len(ref)-off, firstDiff(out, ref[off:]), len(mc.out), firstDiff(out, mc.out))
	}
	if fs, err := refDeframe(ref, Options{CRC: crc, RecvMarkers: markers}); !errors.Is(err, io.EOF) || len(fs) < len(ulpdus) {
		t.Fatalf("%s: the reference deframer: %d FPDUs, %v", name, len(fs), err)
	}
	if completed != len(ulpdus) || e.Pending() != 0 || e.cur != nil || len(e.blocks) != 0 {
		t.Fatalf("%s: %d of %d FPDUs completed; %d pending; arena still held", name, completed, len(ulpdus), e.Pending())
	}
}

// TestEncoderReferences: a payload piece longer than CopyMax is sent in
// place (a change before Done shows in Bufs), a shorter one and every
// piece of AppendCopy are copied; consumed references are dropped.
func TestEncoderReferences(t *testing.T) {
	hdr := make([]byte, 14)
	long, short := bytes.Repeat([]byte{1}, CopyMax+1), bytes.Repeat([]byte{2}, CopyMax)
	for _, copyAll := range []bool{false, true} {
		e := NewEncoder(Options{CRC: true}, 0)
		var err error
		if copyAll {
			err = e.AppendCopy(hdr, long, short)
		} else {
			err = e.Append(hdr, long, short)
		}
		if err != nil {
			t.Fatal(err)
		}
		before := bytes.Join(e.Bufs(nil), nil)
		long[0], short[0] = 9, 9
		after := bytes.Join(e.Bufs(nil), nil)
		long[0], short[0] = 1, 2
		changed := !bytes.Equal(before, after)
		if changed == copyAll || after[HeaderLen+14] != 9 && !copyAll || after[HeaderLen+14+len(long)] != 2 {
			t.Errorf("AppendCopy %v: the long piece referenced %v, the short one copied %v", copyAll, changed, after[HeaderLen+14+len(long)] == 2)
		}
		if e.Done(e.Buffered()) != 1 {
			t.Errorf("AppendCopy %v: Done did not complete the FPDU", copyAll)
		}
		for _, b := range e.iov[:cap(e.iov)] {
			if b != nil {
				t.Fatal("a consumed iovec is still referenced")
			}
		}
	}
}

// TestEncoderErrors: ULPDUs outside MinULPDU..65535 octets are refused and
// nothing is queued; Done beyond Buffered panics.
func TestEncoderErrors(t *testing.T) {
	e := NewEncoder(Options{CRC: true, SendMarkers: true}, 100)
	if err := e.Append(make([]byte, 13)); !errors.Is(err, ErrSendULPDUTooShort) {
		t.Errorf("13 octets: %v", err)
	}
	if err := e.AppendCopy(make([]byte, 14), make([]byte, MaxULPDULen-13)); !errors.Is(err, ErrSendULPDUTooLong) {
		t.Errorf("65536 octets: %v", err)
	}
	if e.Buffered() != 0 || e.Pending() != 0 || len(e.Bufs(nil)) != 0 {
		t.Fatal("a refused ULPDU was queued")
	}
	if err := e.Append(make([]byte, 14), make([]byte, MaxULPDULen-14)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Done beyond Buffered did not panic")
		}
	}()
	e.Done(e.Buffered() + 1)
}

// TestEncoderReset: Reset drops everything queued and the next FPDUs carry
// the markers of the position after what was consumed.
func TestEncoderReset(t *testing.T) {
	opts := Options{CRC: true, SendMarkers: true}
	a, b, c := make([]byte, 300), make([]byte, 700), make([]byte, 40)
	for i := range b {
		b[i] = byte(i)
	}
	e := NewEncoder(opts, 0)
	for _, u := range [][]byte{a, b} {
		if err := e.Append(u); err != nil {
			t.Fatal(err)
		}
	}
	first := len(refFrame(nil, a, true, true))
	out, done := encDrain(e, nil, first)
	if done != 1 {
		t.Fatalf("Done after the first FPDU: %d", done)
	}
	e.Reset()
	if e.Buffered() != 0 || e.Pending() != 0 || e.cur != nil {
		t.Fatal("Reset left octets queued")
	}
	if err := e.Append(c); err != nil {
		t.Fatal(err)
	}
	out, done = encDrain(e, out, e.Buffered())
	want := refFrame(refFrame(nil, a, true, true), c, true, true)
	if done != 1 || !bytes.Equal(out, want) {
		t.Fatalf("after Reset: %d FPDUs, stream differs at %d", done, firstDiff(out, want))
	}
}

// TestEncoderBacklog: a queue that never empties (each write leaves up to
// two FPDUs behind) keeps producing the reference's octets, and its arena
// and iovec queue stay bounded: consumed blocks go back to the pool and
// the queues are compacted.
func TestEncoderBacklog(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, markers := range []bool{false, true} {
		opts := Options{CRC: true, SendMarkers: markers}
		e := NewEncoder(opts, 0)
		var ref, out []byte
		maxBlocks, fpdus := 0, 0
		for range 1500 {
			u := make([]byte, 14+rng.IntN(3000))
			for i := range u {
				u[i] = byte(rng.Uint32())
			}
			ref = refFrame(ref, u, markers, true)
			hdr, pieces, copyAll := encPieces(rng, u)
			var err error
			if copyAll {
				err = e.AppendCopy(hdr, pieces...)
			} else {
				err = e.Append(hdr, pieces...)
			}
			if err != nil {
				t.Fatal(err)
			}
			var done int
			out, done = encDrain(e, out, max(0, e.Buffered()-rng.IntN(7000)))
			fpdus += done
			maxBlocks = max(maxBlocks, len(e.blocks)-e.bhead)
		}
		if e.Buffered() == 0 {
			t.Fatal("the backlog drained")
		}
		if maxBlocks > 3 || cap(e.iov) > 256 || cap(e.ends) > 64 {
			t.Errorf("markers %v: up to %d live blocks, iovec queue of %d, FPDU queue of %d", markers, maxBlocks, cap(e.iov), cap(e.ends))
		}
		var done int
		out, done = encDrain(e, out, e.Buffered())
		if fpdus+done != 1500 || !bytes.Equal(out, ref) {
			t.Fatalf("markers %v: %d FPDUs done, stream differs at %d of %d", markers, fpdus+done, firstDiff(out, ref), len(ref))
		}
	}
}

// TestEncoderDecoderOffsets: FPDUs framed by an Encoder from any 4-aligned
// stream offset (every FPDU boundary is one) are read back by a Decoder
// started at the same offset, markers and CRC on: the markers of both
// sides agree wherever full operation began, and a Decoder that counts
// from elsewhere fails with a framing error.
func TestEncoderDecoderOffsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	offs := []uint64{0, 4, 8, 500, 504, 508, 512, 516, 1020, 1 << 40}
	for range 10 {
		offs = append(offs, 4*rng.Uint64N(1<<20))
	}
	for _, off := range offs {
		opts := Options{CRC: true, SendMarkers: true, RecvMarkers: true}
		e := NewEncoder(opts, off)
		var us [][]byte
		for range 12 {
			u := make([]byte, 14+rng.IntN(1200))
			for i := range u {
				u[i] = byte(rng.Uint32())
			}
			us = append(us, u)
			if err := e.Append(u[:14], u[14:]); err != nil {
				t.Fatal(err)
			}
		}
		s, _ := encDrain(e, nil, e.Buffered())
		got, err := decodeAll(t, NewDecoder(opts, off), s, newDecDrive(rng))
		if err != io.EOF {
			t.Fatalf("offset %d: %v after %d FPDUs", off, err, len(got))
		}
		if len(got) != len(us) {
			t.Fatalf("offset %d: %d FPDUs", off, len(got))
		}
		var pe *wire.ProtocolError
		if got, err := decodeAll(t, NewDecoder(opts, off+4), s, newDecDrive(rng)); !errors.As(err, &pe) {
			t.Fatalf("offset %d read as %d: %v after %d FPDUs", off, off+4, err, len(got))
		}
	}
}
