package fpdu

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// The Decoder's differential test: the seeded random streams of
// differential_test.go (framed by the reference framer), pristine, read
// with other options, with one octet corrupted and truncated, go through
// the Decoder driven in random ways (reads down to one octet, Buf or Bufs,
// destinations or discards, Stage), from the stream's start and from a
// later FPDU boundary (a non-zero start offset, markers included), and
// must give the FPDUs and the error the reference deframer gives. Replay
// or extend with the differential test's flags:
//
//	go test ./internal/fpdu -run TestDecoderDifferential -fpdu.seed=N -fpdu.streams=M

// decDrive is one way of driving a Decoder.
type decDrive struct {
	split   func(max int) int // octets per read
	bufs    bool              // read with Bufs (a vectored read)
	discard int               // discard the rest of one FPDU in discard (0: never)
	scatter bool              // place into several separate pieces (PlaceV)
	stage   int               // Stage more header in one FPDU in stage (0: never)
	rng     *rand.Rand
}

// newDecDrive returns a random way of driving a Decoder.
func newDecDrive(rng *rand.Rand) *decDrive {
	dr := &decDrive{rng: rand.New(rand.NewPCG(rng.Uint64(), 1))}
	switch rng.IntN(4) {
	case 0:
		dr.split = func(int) int { return 1 }
	case 1:
		dr.split = randomSplit(rng.Uint64())
	case 2:
		dr.split = func(m int) int { return m }
	default:
		k := 1 + rng.IntN(40)
		dr.split = func(m int) int { return min(m, k) }
	}
	dr.bufs = rng.IntN(2) == 0
	if rng.IntN(3) == 0 {
		dr.discard = 1 + rng.IntN(3)
	}
	if rng.IntN(3) == 0 {
		dr.stage = 1 + rng.IntN(3)
	}
	dr.scatter = rng.IntN(3) == 0
	return dr
}

// pieces returns separate buffers of n octets in all (some empty), for
// PlaceV: a write past the end of one would not land in the next.
func (dr *decDrive) pieces(n int) [][]byte {
	var ps [][]byte
	for n > 0 || len(ps) == 0 {
		k := min(n, dr.rng.IntN(3)*dr.rng.IntN(n+1))
		ps = append(ps, make([]byte, k))
		n -= k
	}
	return ps
}

func (dr *decDrive) String() string {
	return fmt.Sprintf("Bufs %v, discard 1 in %d, stage 1 in %d, scatter %v", dr.bufs, dr.discard, dr.stage, dr.scatter)
}

// decodeAll feeds stream to d as dr says until it ends or fails, checking
// the Decoder's invariants on the way, and returns the ULPDUs (the octets
// of a discarded rest are zero) and the error: d.Err(), or at the end of
// the stream ErrTruncated inside an FPDU and io.EOF between FPDUs.
func decodeAll(t testing.TB, d *Decoder, stream []byte, dr *decDrive) ([][]byte, error) {
	t.Helper()
	var out [][]byte
	var iov [][]byte
	var hdr []byte
	var dst [][]byte
	staged := 0 // Stage calls in this FPDU
	for {
		switch d.Step() {
		case NeedBytes:
			if d.Err() != nil {
				t.Fatalf("NeedBytes with error %v", d.Err())
			}
			if len(stream) == 0 {
				if d.Mid() {
					return out, ErrTruncated
				}
				return out, io.EOF
			}
			iov = iov[:0]
			if dr.bufs {
				iov = d.Bufs(iov)
			} else {
				iov = append(iov, d.Buf())
			}
			room := 0
			for _, b := range iov {
				room += len(b)
			}
			if room == 0 {
				t.Fatal("NeedBytes with nothing to write into")
			}
			n := min(room, len(stream), max(1, dr.split(room)))
			left := n
			for _, b := range iov {
				left -= copy(b[:min(left, len(b))], stream[n-left:])
			}
			stream = stream[n:]
			d.Advance(n)
		case NeedPlace:
			if d.Buf() != nil || len(d.Bufs(nil)) != 0 {
				t.Fatal("Buf at NeedPlace")
			}
			h := d.Header()
			if staged == 0 && len(h) != min(d.ULPDULen(), HeaderPeek) || len(h) > d.ULPDULen() {
				t.Fatalf("Header of %d octets for ULPDU_Length %d", len(h), d.ULPDULen())
			}
			if dr.stage > 0 && staged < 2 && dr.rng.IntN(dr.stage) == 0 {
				extra := dr.rng.IntN(40)
				if dr.rng.IntN(8) == 0 {
					extra = dr.rng.IntN(70000)
				}
				want := min(d.ULPDULen(), len(h)+extra)
				d.Stage(extra)
				staged++
				if d.Step() == NeedPlace && len(d.Header()) != want {
					t.Fatalf("Stage(%d) from %d: Header of %d octets, want %d", extra, len(h), len(d.Header()), want)
				}
				continue
			}
			hdr = bytes.Clone(h)
			rest := d.ULPDULen() - len(h)
			switch {
			case dr.discard > 0 && dr.rng.IntN(dr.discard) == 0:
				dst = [][]byte{make([]byte, rest)}
				d.Place(nil)
			case dr.scatter:
				dst = dr.pieces(rest)
				d.PlaceV(dst)
			default:
				dst = [][]byte{make([]byte, rest)}
				d.Place(dst[0])
			}
		case FPDUDone:
			if d.Buf() != nil {
				t.Fatal("Buf at FPDUDone")
			}
			if err := d.Err(); err != nil {
				return out, err
			}
			if !bytes.Equal(d.Header(), hdr) {
				t.Fatal("Header changed before Next")
			}
			out = append(out, append(hdr, bytes.Join(dst, nil)...))
			hdr, dst, staged = nil, nil, 0
			d.Next()
		}
	}
}

// decodeCompare runs the Decoder over stream from stream offset off (an
// FPDU boundary, from index skip of the reference's FPDUs) and compares
// with the reference deframer's reading of the whole stream.
func decodeCompare(t *testing.T, name string, stream []byte, opts Options, rng *rand.Rand) {
	t.Helper()
	want, werr := refDeframe(stream, opts)
	off, skip := 0, 0
	if len(want) > 0 && rng.IntN(3) == 0 {
		skip = 1 + rng.IntN(len(want))
		for _, f := range want[:skip] {
			off += f.size
		}
		want = want[skip:]
	}
	dr := newDecDrive(rng)
	if raceEnabled && len(stream) > diffRaceSmall {
		// Under the race detector sync.Pool drops staging buffers at
		// random, and each small read of a big stream would then
		// allocate one: read in coarser pieces.
		r := rand.New(rand.NewPCG(rng.Uint64(), 0))
		dr.split = func(n int) int { return 1 + r.IntN(min(n, 4096)) }
	}
	d := NewDecoder(opts, uint64(off))
	got, gerr := decodeAll(t, d, stream[off:], dr)
	if gerr != werr || len(got) != len(want) {
		t.Errorf("%s, %s, from offset %d (%v): Decoder read %d FPDUs then %v; reference %d then %v",
			name, optsString(opts), off, dr, len(got), gerr, len(want), werr)
		return
	}
	for i := range got {
		if len(got[i]) != len(want[i].ulpdu) {
			t.Errorf("%s, %s, from offset %d: FPDU %d: %d octets, reference %d", name, optsString(opts), off, skip+i, len(got[i]), len(want[i].ulpdu))
			return
		}
		if dr.discard == 0 && !bytes.Equal(got[i], want[i].ulpdu) {
			t.Errorf("%s, %s, from offset %d (%v): FPDU %d differs from the reference's at octet %d",
				name, optsString(opts), off, dr, skip+i, firstDiff(got[i], want[i].ulpdu))
			return
		}
	}
}

func TestDecoderDifferential(t *testing.T) {
	diffSeeds(t, "TestDecoderDifferential", decDiffOne)
}

// diffSeeds runs one(t, seed) for the streams the differential test's
// flags select (the CI default from seed 1) and names the replay of the
// first that fails.
func diffSeeds(t *testing.T, test string, one func(*testing.T, uint64)) {
	n := *diffStreams
	if n <= 0 {
		n = diffDefaultStreams
	}
	for i := range uint64(n) {
		seed := *diffSeed + i
		one(t, seed)
		if t.Failed() {
			t.Fatalf("replay: go test ./internal/fpdu -run %s -fpdu.seed=%d -fpdu.streams=1", test, seed)
		}
	}
}

// decDiffOne runs one stream through the Decoder.
func decDiffOne(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x646563))
	markers, crc := rng.IntN(4) != 0, rng.IntN(2) == 0
	var ref []byte
	var ends []int
	for _, u := range diffULPDUs(rng, markers) {
		ref = refFrame(ref, u, markers, crc)
		ends = append(ends, len(ref))
	}
	opts := Options{CRC: crc, RecvMarkers: markers}
	decodeCompare(t, fmt.Sprintf("seed %d pristine", seed), ref, opts, rng)
	if rng.IntN(4) == 0 { // read with the other side's idea of the options
		o := opts
		[]func(){
			func() { o.RecvMarkers = !o.RecvMarkers },
			func() { o.CRC = !o.CRC },
			func() { o.MaxULPDU = MinULPDU + rng.IntN(1500) },
		}[rng.IntN(3)]()
		decodeCompare(t, fmt.Sprintf("seed %d read with other options", seed), ref, o, rng)
	}
	for range 2 {
		s := bytes.Clone(ref)
		i := rng.IntN(len(s))
		s[i] ^= byte(1 + rng.IntN(255))
		decodeCompare(t, fmt.Sprintf("seed %d octet %d corrupted", seed, i), s, opts, rng)
	}
	for range 3 {
		cut := rng.IntN(len(ref))
		if rng.IntN(2) == 0 {
			cut = max(0, min(len(ref)-1, ends[rng.IntN(len(ends))]+rng.IntN(9)-4))
		}
		decodeCompare(t, fmt.Sprintf("seed %d truncated to %d", seed, cut), ref[:cut], opts, rng)
	}
}
