package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// resolveSGL resolves the STags of sgl, a work request's local memory, in
// table t for protection domain pd, appending the Segs to dst and writing
// each region's generation to gens[i] (len(gens) >= len(sgl)). An STag
// must name a registered region (not a memory window) by its current key
// (ErrBadSGE: unknown, a window, or a key re-keyed since), of pd (ErrPD),
// that covers the SGE's bytes (ErrBadSGE). A region that is invalid now is
// not refused here: it is recorded at a generation that can never be
// pinned, and the WR completes with a local protection error when it uses
// the bytes (as it would had the region been invalidated after the post).
//
// A WR posted with an old key must never move bytes under a newer
// registration. A Begin clears the valid bit, then moves the generation
// on (live, for a re-key), and only then publishes a re-key's new key: a
// key compared right after the generation was read may therefore be the
// old one while the generation read is already the new key's. So the
// generation is read before and after the valid bit and the key: when
// both reads agree (no Begin moved it in between) and the region was
// valid, the key read is the one of that generation (a Begin that made it
// cleared the valid bit before it moved the generation, and published its
// key before the valid bit was seen set; the next one cannot publish
// another before it moves the generation on). Otherwise (an invalid
// region, or a Begin in progress) the generation recorded is one before
// the one read, which is never current again (short of 2^24 generations)
// and so never pins.
func resolveSGL(t *mem.Table, pd uint32, dst []Seg, gens []mem.Gen, sgl []rdma.SGE) ([]Seg, error) {
	for i := range sgl {
		s := &sgl[i]
		r := t.Lookup(mem.STag(s.STag))
		if r == nil || r.Window() != nil {
			return dst, ErrBadSGE // a memory window is for remote access only
		}
		g := r.Gen()
		valid := r.Valid()
		if uint32(r.STag()) != s.STag {
			return dst, ErrBadSGE
		}
		if !valid || r.Gen() != g {
			g-- // not valid with this key at g: a generation that never pins
		}
		if r.PD() != pd {
			return dst, ErrPD
		}
		seg := Seg{Region: r, Off: s.Offset, Len: s.Length}
		if seg.bytes() == nil {
			return dst, ErrBadSGE
		}
		gens[i] = g
		dst = append(dst, seg)
	}
	return dst, nil
}
