package rdmap

import (
	"runtime"
	satomic "sync/atomic"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview6ResolveNeverPairsOldKeyWithNewGeneration: a re-key clears the
// valid bit, moves the generation on (live) and only then publishes the
// new key. resolveSGL read the generation and then compared the key
// without looking at the valid bit, so a post with the old key that ran
// between those two steps recorded the NEW generation: the WR then pinned
// and moved bytes under the new registration although its key had been
// revoked. A resolution must record its key's own generation, or an older
// one (which can no longer pin).
//
// The window is a few instructions wide: one goroutine re-keys the region
// at most two generations ahead of the resolutions, the other resolves
// the latest key it knows. Keys come from a counter, so the few keys in
// play at once are distinct and a generation is known by its key. After
// the fix the check cannot fail; before it, it fails within the rounds on
// any multi-core machine.
func TestReview6ResolveNeverPairsOldKeyWithNewGeneration(t *testing.T) {
	var ctr satomic.Uint32
	table := mem.NewTable(mem.TableOptions{Random: func() uint32 { return ctr.Add(1) }})
	r := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	const rounds = 10000
	gen0 := r.Gen()
	keys := make([]satomic.Uint32, rounds+1) // keys[i]: the key of generation gen0+i
	keys[0].Store(stagOf(r))
	var published, seen satomic.Int64 // the last key published; the last one resolved
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); i <= rounds; i++ {
			for i > seen.Load()+2 {
				runtime.Gosched()
			}
			st, err := table.Rekey(r, mem.AccessLocalWrite)
			if err != nil {
				panic(err)
			}
			keys[i].Store(uint32(st))
			published.Store(i)
		}
	}()
	var segs [1]Seg
	var gens [1]mem.Gen
	for {
		select {
		case <-done:
			return
		default:
		}
		j := published.Load()
		k := keys[j].Load()
		_, err := resolveSGL(table, testPD, segs[:0], gens[:], []rdma.SGE{{STag: k, Length: 8}})
		if age := int64((gens[0] - gen0) & (1<<24 - 1)); err == nil && age > j && age < 1<<23 { // (an age near 2^24 is older)
			t.Fatalf("key %#x of generation %d resolved at generation %d (key %#x)", k, gen0+mem.Gen(j), gens[0], keys[age].Load())
		}
		seen.Store(j)
	}
}
