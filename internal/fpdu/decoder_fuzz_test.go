package fpdu

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// FuzzDecoder: the Decoder, fed arbitrary octets from an arbitrary stream
// offset in arbitrary pieces (Buf or Bufs) and driven in arbitrary ways
// (destinations, discards, Stage), never panics, keeps its invariants
// (decodeAll checks them) and sees exactly the FPDUs and the error the
// Reader sees. flags: bits 0-2 as optsFromFlags (CRC, markers, a small
// receive bound), bit 3 Bufs, bits 4-5 discards, bits 6-7 Stage calls.
func FuzzDecoder(f *testing.F) {
	splits := []byte{1, 7, 0, 200, 3}
	fuzzSeeds(f, func(data []byte, off uint64, flags byte) { f.Add(data, off, splits, flags) })
	rng := rand.New(rand.NewPCG(1, 2))
	for _, flags := range []byte{0, 1, 3, 3 | 8 | 16 | 64, 2 | 8 | 32 | 128} {
		markers, crc := flags&2 != 0, flags&1 != 0
		var s []byte
		for _, u := range diffULPDUs(rng, markers) {
			s = refFrame(s, u, markers, crc)
		}
		f.Add(s, uint64(0), []byte{0}, flags)
		f.Add(s, uint64(0), splits, flags)
	}
	f.Fuzz(func(t *testing.T, data []byte, off uint64, splits []byte, flags byte) {
		opts := optsFromFlags(flags)
		r := NewConn(&memConn{in: data}, opts).Reader()
		r.m = newMarkerStream(opts.RecvMarkers, off)
		want, werr := readFPDUs(r, func(m int) int { return m }, false)
		dr := &decDrive{
			split:   splitFromBytes(splits),
			bufs:    flags&8 != 0,
			discard: int(flags >> 4 & 3),
			stage:   int(flags >> 6),
			scatter: len(splits) > 0 && splits[0]&1 != 0,
			rng:     rand.New(rand.NewPCG(uint64(len(data)), off)),
		}
		got, gerr := decodeAll(t, NewDecoder(opts, off), data, dr)
		if gerr != werr || len(got) != len(want) {
			t.Fatalf("Decoder: %d FPDUs then %v; Reader: %d then %v", len(got), gerr, len(want), werr)
		}
		for i := range got {
			if len(got[i]) != len(want[i]) || dr.discard == 0 && !bytes.Equal(got[i], want[i]) {
				t.Fatalf("FPDU %d differs", i)
			}
		}
	})
}
