package rdmap

import (
	"bytes"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview6FencedLocalInvalidateWaitsForRead: an OpLocalInvalidate with
// Fence of a Read's sink, posted behind the Read, runs only once the Read
// completed: the Read's data lands, both complete successfully in order,
// and the sink is invalid afterwards. (Inline, meaningless on it, is
// ignored.)
func TestReview6FencedLocalInvalidateWaitsForRead(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	o := defaults()
	a, b := newCore(t, table, o), newCore(t, table, o)
	src := region(t, table, testPD, 3000, 's', mem.AccessRemoteRead)
	sink := region(t, table, testPD, 3000, 0, mem.AccessLocalWrite)
	wrs := []SendWR{
		{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(sink)}, Remote: rdma.RemoteBuffer{STag: stagOf(src), TO: src.Base()}},
		{ID: 2, Op: rdma.OpLocalInvalidate, Flags: rdma.Signaled | rdma.Fence | rdma.Inline, InvalidateSTag: stagOf(sink)},
	}
	if _, err := a.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	// The Read Request goes; the invalidation waits for its response.
	rxAll(b, txAll(a), 1000)
	if got := poll(a); len(got) != 0 || !sink.Valid() {
		t.Fatalf("before the response: completions %+v, sink valid %v", got, sink.Valid())
	}
	pump(a, b, 1000)
	wantComps(t, poll(a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
	if !bytes.Equal(sink.Bytes(), src.Bytes()) || sink.Valid() {
		t.Fatalf("sink filled %v, valid %v", bytes.Equal(sink.Bytes(), src.Bytes()), sink.Valid())
	}
}
