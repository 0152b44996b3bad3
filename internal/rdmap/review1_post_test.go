package rdmap

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview1LocalSGEOfAnotherPD: a QP may use only the memory of its own
// protection domain, its local buffers included (RFC 5040 §6.4's
// protection domain, verbs' local protection error). The Core's Config
// names the QP's PD, but PostSend and PostRecv accept an SGE of a region
// registered in another PD: a Send sources from it, a receive or Read
// sink is placed into it. The public API checks this today (qp.go), but
// once the public types are the Core's (issue 17, "the public types can be
// its own") nothing would: the Core should refuse such an SGE itself.
func TestReview1LocalSGEOfAnotherPD(t *testing.T) {
	c, _, table := single(t, defaults())
	other := region(t, table, testPD+1, 64, 'x', mem.AccessLocalWrite)
	if n, err := c.PostSend([]SendWR{{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(other)}}}); n != 0 || err == nil {
		t.Errorf("PostSend of a Send from another PD's region: posted %d, %v", n, err)
	}
	if n, err := c.PostSend([]SendWR{{ID: 2, Op: rdma.OpRead, Remote: rdma.RemoteBuffer{STag: 1}, SGL: []rdma.SGE{sge(other)}}}); n != 0 || err == nil {
		t.Errorf("PostSend of a Read into another PD's region: posted %d, %v", n, err)
	}
	if n, err := c.PostRecv([]RecvWR{{ID: 3, SGL: []rdma.SGE{sge(other)}}}); n != 0 || err == nil {
		t.Errorf("PostRecv into another PD's region: posted %d, %v", n, err)
	}
}
