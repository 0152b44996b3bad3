package verbs

import (
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// TestSRQ: two QPs of one side take their receives from one shared
// receive queue; the limit event fires once, with no lock held (the
// callback posts to the SRQ and asks a QP its state), on the goroutine of
// the QP that took the receive.
func TestSRQ(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	srq, err := NewSRQ(8, 1, table, testPD)
	if err != nil {
		t.Fatal(err)
	}
	post := func(id uint64) {
		r, err := table.Register(testPD, make([]byte, 16), mem.AccessLocalWrite, 0)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := srq.PostRecv([]rdmap.RecvWR{{ID: id, SGL: []rdma.SGE{whole(r)}}}); err != nil {
			t.Error(err)
		}
	}
	o := defaultOpts()
	ob := o
	ob.srq, ob.table = srq, table
	a1, b1 := pair(t, o, ob)
	a2, b2 := pair(t, o, ob)
	for id := uint64(0); id < 4; id++ {
		post(id)
	}
	fired := make(chan rdma.QPState, 2)
	srq.Arm(3, func(*SRQ) {
		post(4) // would deadlock under the SRQ's or a QP's lock
		fired <- b1.qp.State()
	})
	for i, a := range []*end{a1, a2, a1} {
		a.post(t, rdmap.SendWR{ID: uint64(i), Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(a.register(t, []byte("msg"), 0))}})
		a.want(t, uint64(i), rdma.StatusSuccess)
	}
	got := map[uint64]bool{}
	for _, b := range []*end{b1, b2, b1} {
		c := b.next(t)
		if c.Status != rdma.StatusSuccess || got[c.ID] || c.ID > 2 {
			t.Fatalf("receive %+v", c.Completion)
		}
		got[c.ID] = true
	}
	// The callback runs after the QP's lock is released: perhaps just
	// after the completion became visible.
	select {
	case s := <-fired:
		if s != rdma.StateRTS {
			t.Errorf("state %v seen from the limit callback", s)
		}
	case <-time.After(bound):
		t.Fatal("the limit event did not fire when 2 receives of 4 were left")
	}
	if n := srq.Posted(); n != 2 {
		t.Errorf("%d receives posted, want 2 (4 posted, 3 used, 1 reposted)", n)
	}
	if len(fired) != 0 {
		t.Error("the limit event fired more than once")
	}
	// Closing a QP leaves the SRQ's receives to the others.
	b1.closeWithin(t)
	if n := srq.Posted(); n != 2 {
		t.Errorf("%d receives posted after one QP closed, want 2", n)
	}
}
