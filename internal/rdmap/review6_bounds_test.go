package rdmap

import (
	"bytes"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview6SGEBoundsAndRegionStates: the bounds check of a resolved SGE
// at the edges (Offset at and past the end, Offset near 2^64, Length 0),
// and the region states at post: re-keyed (the new key works and moves
// bytes; the old one is refused), invalidated (accepted, fails at use
// with a local protection completion), deregistered (refused).
func TestReview6SGEBoundsAndRegionStates(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	r := region(t, table, testPD, 64, 'r', mem.AccessLocalWrite)
	k := stagOf(r)
	o := defaults()
	for _, tc := range []struct {
		s    rdma.SGE
		want error
	}{
		{rdma.SGE{STag: k, Offset: 64, Length: 0}, nil},
		{rdma.SGE{STag: k, Offset: 0, Length: 64}, nil},
		{rdma.SGE{STag: k, Offset: 63, Length: 1}, nil},
		{rdma.SGE{STag: k, Offset: 65, Length: 0}, ErrBadSGE},
		{rdma.SGE{STag: k, Offset: 64, Length: 1}, ErrBadSGE},
		{rdma.SGE{STag: k, Offset: ^uint64(0), Length: 2}, ErrBadSGE},
		{rdma.SGE{STag: k, Offset: ^uint64(0) - 62, Length: 64}, ErrBadSGE},
		{rdma.SGE{STag: k, Offset: 1, Length: ^uint32(0)}, ErrBadSGE},
		{rdma.SGE{STag: 0, Length: 0}, ErrBadSGE},
	} {
		c := newCore(t, table, o)
		if _, err := c.PostSend([]SendWR{{Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{tc.s}}}); !errors.Is(err, tc.want) {
			t.Errorf("SGE %+v: %v, want %v", tc.s, err, tc.want)
		}
		if _, err := c.PostRecv([]RecvWR{{SGL: []rdma.SGE{tc.s}}}); !errors.Is(err, tc.want) {
			t.Errorf("receive SGE %+v: %v, want %v", tc.s, err, tc.want)
		}
	}

	// Re-keyed before the post: the new key resolves at the new
	// generation and moves the bytes; the old one is refused.
	a, b := newCore(t, table, o), newCore(t, table, o)
	dst := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	nk, err := table.Rekey(r, mem.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.PostSend([]SendWR{{Op: rdma.OpSend, SGL: []rdma.SGE{{STag: k, Length: 8}}}}); !errors.Is(err, ErrBadSGE) {
		t.Fatalf("post with the old key: %v", err)
	}
	if _, err := b.PostRecv([]RecvWR{{ID: 1, SGL: []rdma.SGE{sge(dst)}}, {ID: 2, SGL: []rdma.SGE{sge(dst)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PostSend([]SendWR{{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: uint32(nk), Length: 64}}}}); err != nil {
		t.Fatal(err)
	}
	pump(a, b, 1000)
	wantComps(t, poll(a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}})
	wantComps(t, poll(b), Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}})
	if !bytes.Equal(dst.Bytes(), r.Bytes()) {
		t.Fatal("the Send with the new key did not move the bytes")
	}

	// Invalidated: accepted, fails at use.
	table.BeginInvalidate(r, nk)
	if _, err := a.PostSend([]SendWR{{ID: 2, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: uint32(nk), Length: 64}}}}); err != nil {
		t.Fatalf("post from an invalidated region: %v", err)
	}
	pump(a, b, 1000)
	if got := poll(a); len(got) != 1 || got[0].ID != 2 || got[0].Status != rdma.StatusLocalProtection {
		t.Fatalf("completions %+v, want id 2 with a local protection error", got)
	}

	// Deregistered: refused.
	c := newCore(t, table, o)
	table.BeginDeregister(r)
	if _, err := c.PostSend([]SendWR{{Op: rdma.OpSend, SGL: []rdma.SGE{{STag: uint32(nk), Length: 8}}}}); !errors.Is(err, ErrBadSGE) {
		t.Fatalf("post from a deregistered region: %v", err)
	}
}
