package rdmap

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview6RecvRingGrowKeepsResolvedSGLs: receives with 0 to maxSGE
// SGEs, some taken and released out of order while the ring grows under
// them: every receive taken afterwards has the SGL and generations it was
// posted with, and a receive taken before a growth keeps its own.
func TestReview6RecvRingGrowKeepsResolvedSGLs(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	regs := make([]*mem.Region, 8)
	for i := range regs {
		regs[i] = region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	}
	q := NewRecvRing(64, 3, table, testPD)
	sglOf := func(id int) []rdma.SGE {
		var sgl []rdma.SGE
		for k := range id % 4 {
			r := regs[(id+k)%len(regs)]
			sgl = append(sgl, rdma.SGE{STag: stagOf(r), Offset: uint64(k), Length: uint32(id % 7)})
		}
		return sgl
	}
	check := func(p PostedRecv, gens []mem.Gen) {
		t.Helper()
		want := sglOf(int(p.ID))
		if len(p.SGL) != len(want) || len(gens) != len(want) {
			t.Fatalf("receive %d: %d SGEs, %d gens, want %d", p.ID, len(p.SGL), len(gens), len(want))
		}
		for k, s := range p.SGL {
			if uint32(s.Region.STag()) != want[k].STag || s.Off != want[k].Offset || s.Len != want[k].Length || gens[k] != s.Region.Gen() {
				t.Fatalf("receive %d SGE %d: %+v, want %+v", p.ID, k, s, want[k])
			}
		}
	}
	type taken struct {
		p    PostedRecv
		gens []mem.Gen
		slot uint64
	}
	var held []taken
	next, want := 0, 0
	for round := range 12 {
		for range round%5 + 1 {
			if n, err := q.Post([]RecvWR{{ID: uint64(next), SGL: sglOf(next)}}); n != 1 {
				t.Fatal(err)
			}
			next++
		}
		for range round%3 + 1 {
			p, gens, slot, ok := q.Take()
			if !ok {
				break
			}
			if int(p.ID) != want {
				t.Fatalf("took %d, want %d", p.ID, want)
			}
			want++
			check(p, gens)
			held = append(held, taken{p, gens, slot})
		}
		for _, h := range held {
			check(h.p, h.gens) // still intact after any growth
		}
		// Release every other held receive, newest first.
		for i := len(held) - 1; i >= 0; i -= 2 {
			q.Release(held[i].slot)
			held = append(held[:i], held[i+1:]...)
		}
	}
}
