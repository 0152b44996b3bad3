package verbs

import (
	"context"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// TestAllocations: the data paths allocate nothing in steady state, in
// any goroutine of the process (testing.AllocsPerRun counts them all):
// the poster's, both pollers', the CQ waiters'.
func TestAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	a, b := defaultPair(t)
	if !a.dev.Polling() {
		t.Skip("the portable path (receive goroutines, blocking writes) is correct, not allocation-free")
	}
	target := b.register(t, make([]byte, 1<<20), mem.AccessRemoteWrite|mem.AccessRemoteRead|mem.AccessRemoteAtomic)
	src := a.register(t, make([]byte, 1<<20), mem.AccessLocalWrite)
	rb := b.register(t, make([]byte, 64), mem.AccessLocalWrite)
	ctx := context.Background()
	var out [4]CQE
	wait := func(e *end) {
		for e.cq.Poll(out[:1]) == 0 {
			if err := e.cq.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if out[0].Status != rdma.StatusSuccess {
			t.Fatalf("completion %+v", out[0].Completion)
		}
	}
	// The work requests and their SGLs live in reused slices, as the
	// public API's conversion keeps them (the Core's PostSend lets the
	// SGL's array escape: one built per call would allocate).
	sgl := make([]rdma.SGE, 1)
	wrs := make([]rdmap.SendWR, 1)
	rwrs := []rdmap.RecvWR{{SGL: []rdma.SGE{{STag: uint32(rb.STag()), Length: 64}}}}
	post := func(wr rdmap.SendWR, n uint32) {
		sgl[0] = rdma.SGE{STag: uint32(src.STag()), Length: n}
		if wr.Op != rdma.OpFetchAdd {
			wr.SGL = sgl
		}
		wrs[0] = wr
		if _, err := a.qp.PostSend(wrs); err != nil {
			t.Fatal(err)
		}
	}
	sizes := []uint32{8, 4096, 1 << 20}
	cases := []struct {
		name string
		op   func(n uint32)
	}{
		{"Write", func(n uint32) {
			post(remote(rdmap.SendWR{Op: rdma.OpWrite, Flags: rdma.Signaled}, target, 0), n)
			wait(a)
		}},
		{"Read", func(n uint32) {
			post(remote(rdmap.SendWR{Op: rdma.OpRead, Flags: rdma.Signaled}, target, 0), n)
			wait(a)
		}},
		{"Do-Read", func(n uint32) {
			sgl[0] = rdma.SGE{STag: uint32(src.STag()), Length: n}
			c, err := a.qp.Do(ctx, remote(rdmap.SendWR{Op: rdma.OpRead, SGL: sgl}, target, 0))
			if err != nil || c.Status != rdma.StatusSuccess {
				t.Fatalf("%+v %v", c, err)
			}
		}},
		{"FetchAdd", func(uint32) {
			post(remote(rdmap.SendWR{Op: rdma.OpFetchAdd, Flags: rdma.Signaled, Add: 1}, target, 0), 0)
			wait(a)
		}},
		{"Send-Recv", func(n uint32) {
			if _, err := b.qp.PostRecv(rwrs); err != nil {
				t.Fatal(err)
			}
			post(rdmap.SendWR{Op: rdma.OpSend, Flags: rdma.Signaled}, min(n, 64))
			wait(a)
			wait(b)
		}},
	}
	for _, tc := range cases {
		for _, n := range sizes {
			tc.op(n) // warm up: pools, scratch
			tc.op(n)
			if allocs := testing.AllocsPerRun(200, func() { tc.op(n) }); allocs != 0 {
				t.Errorf("%s of %d octets: %v allocations per operation", tc.name, n, allocs)
			}
		}
	}
}
