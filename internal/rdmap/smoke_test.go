package rdmap

import (
	"bytes"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

func TestSmokeSend(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	o := defaults()
	a, b := newCore(t, table, o), newCore(t, table, o)
	src := region(t, table, testPD, 3000, 'x', 0)
	dst := region(t, table, testPD, 4000, 0, mem.AccessLocalWrite)
	if _, err := b.PostRecv([]RecvWR{{ID: 7, SGL: []rdma.SGE{sge(dst)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PostSend([]SendWR{{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}}}); err != nil {
		t.Fatal(err)
	}
	pump(a, b, 100)
	wantComps(t, poll(a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}})
	got := poll(b)
	wantComps(t, got, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 7}})
	if got[0].Len != 3000 || !bytes.Equal(dst.Bytes()[:3000], src.Bytes()) {
		t.Fatalf("receive %+v", got[0])
	}
}
