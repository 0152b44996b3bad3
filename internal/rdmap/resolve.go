package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// resolveSGL resolves the STags of sgl, a work request's local memory, in
// table t for protection domain pd, appending the Segs to dst and writing
// each region's generation to gens[i] (len(gens) >= len(sgl)). The
// generation is read before the key is compared, so a re-key between the
// two either fails the comparison or leaves the old generation, which the
// WR's accesses then fail: a WR posted with an old key never moves bytes
// under the new registration. An STag
// must name a registered region (not a memory window) by its current key
// (ErrBadSGE: unknown, a window, or a key re-keyed since), of pd (ErrPD), that covers the SGE's bytes (ErrBadSGE).
// A region that is invalid now is not refused here: its generation is
// recorded, and the WR completes with a local protection error when it
// uses the bytes (as it would had the region been invalidated after the
// post).
func resolveSGL(t *mem.Table, pd uint32, dst []Seg, gens []mem.Gen, sgl []rdma.SGE) ([]Seg, error) {
	for i := range sgl {
		s := &sgl[i]
		r := t.Lookup(mem.STag(s.STag))
		if r == nil {
			return dst, ErrBadSGE
		}
		gens[i] = r.Gen()
		if r.Window() != nil || uint32(r.STag()) != s.STag {
			return dst, ErrBadSGE // a memory window is for remote access only
		}
		if r.PD() != pd {
			return dst, ErrPD
		}
		g := Seg{Region: r, Off: s.Offset, Len: s.Length}
		if g.bytes() == nil {
			return dst, ErrBadSGE
		}
		dst = append(dst, g)
	}
	return dst, nil
}
