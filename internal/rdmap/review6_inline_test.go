package rdmap

import (
	"context"
	"encoding/binary"
	"runtime"
	satomic "sync/atomic"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview6InlineCopyUnderThePostedKey: an Inline WR's payload is copied
// at post (copyFromSGL), under a transient pin of the region's CURRENT
// generation, not of the generation resolveSGL recorded for the SGE's
// key. A re-key that completes between the two lets a post with the old
// key copy bytes the application wrote after Rekey returned (when no byte
// may move through the old registration any more, docs/semantics.md rule
// 6). The application here writes, after each Rekey returns, the number
// of re-keys done into the buffer; a post with the key of generation j
// must never copy a number above j.
func TestReview6InlineCopyUnderThePostedKey(t *testing.T) {
	var ctr satomic.Uint32
	table := mem.NewTable(mem.TableOptions{Random: func() uint32 { return ctr.Add(1) }})
	o := defaults()
	o.sq = 1 << 12
	c := newCore(t, table, o)
	r := region(t, table, testPD, 8, 0, mem.AccessLocalWrite)
	const rounds = 2000
	keys := make([]satomic.Uint32, rounds+1)
	keys[0].Store(stagOf(r))
	var published, seen satomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); i <= rounds; i++ {
			for i > seen.Load()+2 {
				runtime.Gosched()
			}
			st, err := table.RekeyContext(context.Background(), r, mem.AccessLocalWrite)
			if err != nil {
				panic(err)
			}
			// No byte moves through the old key any more: the buffer is
			// the application's to write.
			binary.LittleEndian.PutUint64(r.Bytes(), uint64(i))
			keys[i].Store(uint32(st))
			published.Store(i)
		}
	}()
	sgl := []rdma.SGE{{Length: 8}}
	for {
		select {
		case <-done:
			return
		default:
		}
		j := published.Load()
		sgl[0].STag = keys[j].Load()
		if n, _ := c.PostSend([]SendWR{{ID: uint64(j), Op: rdma.OpSend, Flags: rdma.Inline | rdma.Signaled, SGL: sgl}}); n == 1 {
			e := c.entry(c.sqTail - 1)
			if got := binary.LittleEndian.Uint64(e.inline); got > uint64(j) {
				t.Fatalf("an Inline post with the key of generation %d copied bytes written after re-key %d returned", j, got)
			}
			c.sqTail-- // not sent: the slot is free again
		}
		seen.Store(j)
	}
}
