package fpdu_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
)

// The fpdu Encoder's arena blocks and the Decoder's staging buffers come
// from process-wide free lists. These tests interleave many Encoders and
// Decoders (and goroutines) so that blocks and buffers move between them
// all the time, and check that no instance's octets change under it:
// an object handed to two holders at once, or used after Put, would show
// as pending octets changing between two operations on their Encoder, or
// as a decoded ULPDU or CRC that does not match.

type encPair struct {
	enc     *fpdu.Encoder
	dec     *fpdu.Decoder
	snap    []byte   // concat(enc.Bufs()) after the last operation on enc
	ulpdus  [][]byte // appended, in order, not yet decoded
	ends    []int    // Buffered() after each queued FPDU, relative to consumed
	feed    []byte   // consumed octets not yet given to dec
	hdr     []byte
	dst     []byte
	decoded int
}

func flat(bufs [][]byte) []byte {
	var out []byte
	for _, b := range bufs {
		out = append(out, b...)
	}
	return out
}

func (p *encPair) check(t *testing.T, who string) {
	t.Helper()
	if got := flat(p.enc.Bufs(nil)); !bytes.Equal(got, p.snap) {
		i := 0
		for i < len(got) && i < len(p.snap) && got[i] == p.snap[i] {
			i++
		}
		t.Fatalf("%s: pending octets changed while other Encoders worked (first difference at %d of %d/%d)", who, i, len(got), len(p.snap))
	}
}

func (p *encPair) resnap() { p.snap = flat(p.enc.Bufs(nil)) }

// drive feeds up to max octets of feed to the decoder and checks what
// comes out.
func (p *encPair) drive(t *testing.T, rng *rand.Rand, who string) {
	t.Helper()
	for {
		switch p.dec.Step() {
		case fpdu.NeedBytes:
			b := p.dec.Buf()
			if len(p.feed) == 0 {
				p.dec.Advance(0)
				return
			}
			k := min(len(b), len(p.feed), 1+rng.IntN(3000))
			copy(b, p.feed[:k])
			p.feed = p.feed[k:]
			p.dec.Advance(k)
		case fpdu.NeedPlace:
			p.hdr = append(p.hdr[:0], p.dec.Header()...)
			p.dst = make([]byte, p.dec.ULPDULen()-len(p.hdr))
			p.dec.Place(p.dst)
		case fpdu.FPDUDone:
			if err := p.dec.Err(); err != nil {
				t.Fatalf("%s: decoder error %v after %d FPDUs", who, err, p.decoded)
			}
			got := append(append([]byte(nil), p.hdr...), p.dst...)
			if len(p.ulpdus) == 0 || !bytes.Equal(got, p.ulpdus[0]) {
				t.Fatalf("%s: FPDU %d decoded wrong (%d octets)", who, p.decoded, len(got))
			}
			p.ulpdus = p.ulpdus[1:]
			p.decoded++
			p.dec.Next()
		}
	}
}

func stress(t *testing.T, seed uint64, nPairs, steps int, markers bool) {
	rng := rand.New(rand.NewPCG(seed, 77))
	opts := fpdu.Options{CRC: true, SendMarkers: markers, RecvMarkers: markers}
	pairs := make([]*encPair, nPairs)
	for i := range pairs {
		pairs[i] = &encPair{enc: fpdu.NewEncoder(opts, 0), dec: fpdu.NewDecoder(opts, 0)}
	}
	for step := range steps {
		i := rng.IntN(nPairs)
		p := pairs[i]
		who := fmt.Sprintf("seed %d step %d pair %d", seed, step, i)
		p.check(t, who)
		switch op := rng.IntN(10); {
		case op < 4: // Append a ULPDU of random pieces, short and long
			n := fpdu.MinULPDU + rng.IntN(200)
			if rng.IntN(4) == 0 {
				n = fpdu.MinULPDU + rng.IntN(fpdu.MaxULPDULen-fpdu.MinULPDU)
			}
			u := make([]byte, n)
			for j := range u {
				u[j] = byte(rng.Uint32())
			}
			hdr := u[:fpdu.HeaderPeek]
			var pieces [][]byte
			for rest := u[fpdu.HeaderPeek:]; len(rest) > 0; {
				k := min(len(rest), 1+rng.IntN(600))
				pieces = append(pieces, rest[:k])
				rest = rest[k:]
			}
			var err error
			if rng.IntN(2) == 0 {
				err = p.enc.Append(hdr, pieces...)
			} else {
				err = p.enc.AppendCopy(hdr, pieces...)
			}
			if err != nil {
				t.Fatal(err)
			}
			p.ulpdus = append(p.ulpdus, u)
			p.ends = append(p.ends, p.enc.Buffered())
		case op < 8: // consume a random part, like a partial writev
			bufd := p.enc.Buffered()
			if bufd == 0 {
				break
			}
			n := rng.IntN(bufd + 1)
			if rng.IntN(3) == 0 {
				n = bufd
			}
			p.feed = append(p.feed, flat(p.enc.Bufs(nil))[:n]...)
			p.enc.Done(n)
			for j := range p.ends {
				p.ends[j] -= n
			}
			for len(p.ends) > 0 && p.ends[0] <= 0 {
				p.ends = p.ends[1:]
			}
		case op < 9: // Reset at an FPDU boundary (the stream stays whole)
			// at a boundary when the first queued FPDU has nothing consumed:
			// its end equals its full length. We only know that when the
			// Encoder is at a boundary, i.e. Buffered == the sum of the
			// queued FPDUs' lengths, which ends[] tracks (ends[last] ==
			// Buffered always); so check the first one started unconsumed
			// by comparing with the decoder's feed position instead: Reset
			// only when every consumed octet completed an FPDU.
			if markers || len(p.ends) == 0 || p.partial() {
				break
			}
			p.enc.Reset()
			// the queued FPDUs are dropped: they are the last len(ends).
			p.ulpdus = p.ulpdus[:len(p.ulpdus)-len(p.ends)]
			p.ends = nil
		default:
			p.drive(t, rng, who)
		}
		p.resnap()
		// Let another pair's decoder run too, so staging buffers move.
		q := pairs[rng.IntN(nPairs)]
		q.check(t, who+" (other)")
		q.drive(t, rng, who+" (other)")
		q.resnap()
	}
	for i, p := range pairs {
		p.feed = append(p.feed, flat(p.enc.Bufs(nil))...)
		p.enc.Done(p.enc.Buffered())
		p.drive(t, rng, fmt.Sprintf("seed %d final pair %d", seed, i))
		if len(p.ulpdus) != 0 {
			t.Fatalf("pair %d: %d ULPDUs never decoded", i, len(p.ulpdus))
		}
	}
}

// partial reports whether some consumed octets belong to an FPDU still
// queued: the Encoder's first pending FPDU was partly written.
func (p *encPair) partial() bool {
	// Octets queued before the first pending FPDU's start were consumed;
	// its start is ends[0] minus its length. Its length is the framed
	// length of its ULPDU.
	first := p.ulpdus[len(p.ulpdus)-len(p.ends)]
	return p.ends[0] != framed(len(first), p)
}

// framed is an FPDU's length on the wire without markers: length, ULPDU,
// PAD, CRC. With markers the length depends on the position, so Reset is
// only tried without them.
func framed(n int, p *encPair) int {
	return fpdu.HeaderLen + n + fpdu.PadLen(n) + fpdu.CRCLen
}

func TestEncoderDecoderSharing(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() { stress(t, uint64(g), 6, 3000, g == 2) })
	}
	wg.Wait()
}
