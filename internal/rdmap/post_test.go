package rdmap

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestPostSendValidation: each local misuse is refused with its sentinel
// (nothing is queued, nothing sent), and the WRs before it are posted.
func TestPostSendValidation(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	buf := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	ro := region(t, table, testPD, 64, 0, mem.AccessRemoteRead)
	dead := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	table.BeginInvalidate(dead, dead.STag())
	other := region(t, table, testPD+1, 64, 0, mem.AccessLocalWrite)
	rekeyed := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	staleKey := stagOf(rekeyed)
	if _, err := table.Rekey(rekeyed, mem.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	five := []rdma.SGE{sge(buf), sge(buf), sge(buf), sge(buf), sge(buf)}
	cases := []struct {
		name string
		o    func(*cfg)
		wr   SendWR
		want error
	}{
		{"unknown-op", nil, SendWR{Op: 0}, ErrBadOp},
		{"recv-op", nil, SendWR{Op: rdma.OpRecv}, ErrBadOp},
		{"Write-with-Invalidate", nil, SendWR{Op: rdma.OpWrite, Flags: rdma.Invalidate}, ErrBadOp},
		{"Write-with-Solicited-alone", nil, SendWR{Op: rdma.OpWrite, Flags: rdma.Solicited}, ErrBadOp},
		{"Read-with-Immediate", nil, SendWR{Op: rdma.OpRead, Flags: rdma.WithImmediate}, ErrBadOp},
		{"FetchAdd-with-Solicited", nil, SendWR{Op: rdma.OpFetchAdd, Flags: rdma.Solicited}, ErrBadOp},
		{"V2-not-agreed", nil, SendWR{Op: rdma.OpSend, Flags: rdma.WithImmediate}, ErrNotSupportedByPeer},
		{"ReadV2-not-agreed", nil, SendWR{Op: rdma.OpReadV2}, ErrNotSupportedByPeer},
		{"RFC7306-not-agreed", func(o *cfg) { o.rfc7306 = false }, SendWR{Op: rdma.OpFetchAdd}, ErrNotSupportedByPeer},
		{"too-many-SGEs", nil, SendWR{Op: rdma.OpSend, SGL: five}, ErrTooManySGE},
		{"unknown-STag", nil, SendWR{Op: rdma.OpSend, SGL: []rdma.SGE{{STag: stagOf(buf) ^ 0x5A5A00, Length: 1}}}, ErrBadSGE},
		{"stale-key", nil, SendWR{Op: rdma.OpSend, SGL: []rdma.SGE{{STag: staleKey, Length: 1}}}, ErrBadSGE},
		{"other-PD", nil, SendWR{Op: rdma.OpSend, SGL: []rdma.SGE{sge(other)}}, ErrPD},
		{"SGE-outside", nil, SendWR{Op: rdma.OpSend, SGL: []rdma.SGE{{STag: stagOf(buf), Offset: 60, Length: 8}}}, ErrBadSGE},
		{"LocalInv-with-SGL", nil, SendWR{Op: rdma.OpLocalInvalidate, SGL: []rdma.SGE{sge(buf)}}, ErrBadSGE},
		{"Immediate-with-SGL", nil, SendWR{Op: rdma.OpImmediate, SGL: []rdma.SGE{sge(buf)}}, ErrBadSGE},
		{"atomic-no-ORD", func(o *cfg) { o.ord = 0 }, SendWR{Op: rdma.OpCompareSwap}, ErrNoORD},
		{"atomic-misaligned", nil, SendWR{Op: rdma.OpFetchAdd, Remote: rdma.RemoteBuffer{TO: 4}}, ErrMisaligned},
		{"atomic-result-short", nil, SendWR{Op: rdma.OpFetchAdd, SGL: []rdma.SGE{{STag: stagOf(buf), Length: 4}}}, ErrBadSGE},
		{"atomic-result-read-only", nil, SendWR{Op: rdma.OpFetchAdd, SGL: []rdma.SGE{{STag: stagOf(ro), Length: 8}}}, ErrBadSGE},
		{"atomic-two-SGEs", nil, SendWR{Op: rdma.OpFetchAdd, SGL: []rdma.SGE{sge(buf), sge(buf)}}, ErrBadSGE},
		{"Read-no-ORD", func(o *cfg) { o.ord = 0 }, SendWR{Op: rdma.OpRead}, ErrNoORD},
		{"Read-two-SGEs", nil, SendWR{Op: rdma.OpRead, SGL: []rdma.SGE{sge(buf), sge(buf)}}, ErrReadSinkSGE},
		{"Read-sink-read-only", nil, SendWR{Op: rdma.OpRead, Flags: rdma.Invalidate, SGL: []rdma.SGE{sge(ro)}}, ErrAccess},
		{"ReadV2-no-ORD", func(o *cfg) { o.v2, o.ord = true, 0 }, SendWR{Op: rdma.OpReadV2}, ErrNoORD},
		{"ReadV2-sink-read-only", func(o *cfg) { o.v2 = true }, SendWR{Op: rdma.OpReadV2, SGL: []rdma.SGE{sge(buf), sge(ro)}}, ErrAccess},
		{"inline-too-long", func(o *cfg) { o.maxInline = 16 }, SendWR{Op: rdma.OpSend, Flags: rdma.Inline, SGL: []rdma.SGE{sge(buf)}}, ErrInlineTooLong},
		{"inline-from-invalid-region", nil, SendWR{Op: rdma.OpSend, Flags: rdma.Inline, SGL: []rdma.SGE{sge(dead)}}, ErrRegionInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			if tc.o != nil {
				tc.o(&o)
			}
			c := newCore(t, table, o)
			tc.wr.ID = 42
			n, err := c.PostSend([]SendWR{{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled}, tc.wr})
			if n != 1 || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "send WR 1 (id 42)") {
				t.Fatalf("posted %d: %v, want 1 and %v", n, err, tc.want)
			}
			if got := len(newPeer(t, o).recv(txAll(c))); got != 1 {
				t.Fatalf("%d messages sent, want the first WR's only", got)
			}
		})
	}
}

// TestPostRecvValidation: receives are checked like sends; a shared
// receive queue takes no PostRecv on the QP.
func TestPostRecvValidation(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	buf := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	ro := region(t, table, testPD, 64, 0, mem.AccessRemoteRead)
	other := region(t, table, testPD+1, 64, 0, mem.AccessLocalWrite)
	rekeyed := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	staleKey := stagOf(rekeyed)
	if _, err := table.Rekey(rekeyed, mem.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	o := defaults()
	o.rq = 2
	c := newCore(t, table, o)
	for _, tc := range []struct {
		wr   RecvWR
		want error
	}{
		{RecvWR{SGL: []rdma.SGE{sge(buf), sge(buf), sge(buf), sge(buf), sge(buf)}}, ErrTooManySGE},
		{RecvWR{SGL: []rdma.SGE{{STag: stagOf(buf), Offset: 1, Length: 64}}}, ErrBadSGE},
		{RecvWR{SGL: []rdma.SGE{sge(ro)}}, ErrAccess},
		{RecvWR{SGL: []rdma.SGE{{STag: stagOf(buf) ^ 0x5A5A00, Length: 1}}}, ErrBadSGE},
		{RecvWR{SGL: []rdma.SGE{{STag: staleKey, Length: 1}}}, ErrBadSGE},
		{RecvWR{SGL: []rdma.SGE{sge(other)}}, ErrPD},
	} {
		if n, err := c.PostRecv([]RecvWR{tc.wr}); n != 0 || !errors.Is(err, tc.want) {
			t.Fatalf("posted %d: %v, want %v", n, err, tc.want)
		}
	}
	if n, err := c.PostRecv([]RecvWR{{ID: 1}, {ID: 2}, {ID: 3}}); n != 2 || !errors.Is(err, ErrRQFull) {
		t.Fatalf("posted %d: %v, want 2 and a full queue", n, err)
	}
	o.recv = NewRecvRing(4, 1, table, testPD)
	s := newCore(t, table, o)
	if _, err := s.PostRecv([]RecvWR{{ID: 1}}); !errors.Is(err, ErrSharedRecv) {
		t.Fatalf("PostRecv with a shared receive queue: %v", err)
	}
}

// TestNewValidation: an incomplete configuration is refused.
func TestNewValidation(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	for _, c := range []Config{
		{SQDepth: 1, RQDepth: 1, MaxSGE: 1},
		{Table: table, RQDepth: 1, MaxSGE: 1},
		{Table: table, SQDepth: 1, MaxSGE: 1},
		{Table: table, SQDepth: 1, RQDepth: 1},
		{Table: table, SQDepth: 1, RQDepth: 1, MaxSGE: 1, Params: Params{ORD: -1}},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

// TestInlineCopiedAtPost: an Inline WR's buffer is free once PostSend
// returns: what is sent is what the buffer held then.
func TestInlineCopiedAtPost(t *testing.T) {
	o := defaults()
	c, p, table := single(t, o)
	src := region(t, table, testPD, 40, 'a', 0)
	post(t, c, SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Inline | rdma.Signaled, SGL: []rdma.SGE{sge(src)}})
	copy(src.Bytes(), bytes.Repeat([]byte{'b'}, 40))
	table.BeginDeregister(src)
	got := p.recv(txAll(c))
	if len(got) != 1 || !bytes.Equal(got[0][18:], bytes.Repeat([]byte{'a'}, 40)) {
		t.Fatalf("sent % x", got)
	}
	wantComps(t, poll(c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}})
}

// sharedRecv is a shell's shared receive queue: a RecvRing several cores
// take from.
type sharedRecv struct{ r *RecvRing }

func (s *sharedRecv) Take() (PostedRecv, []mem.Gen, uint64, bool) { return s.r.Take() }

// TestSharedReceiveQueue: two cores take their receives, in order, from
// one queue; a core's flush leaves the queue's posted receives for the
// other; the completion's Slot releases the queue's slot.
func TestSharedReceiveQueue(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	srq := &sharedRecv{r: NewRecvRing(4, 1, table, testPD)}
	buf := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	if _, err := srq.r.Post([]RecvWR{{ID: 1, SGL: []rdma.SGE{sge(buf)}}, {ID: 2}, {ID: 3}}); err != nil {
		t.Fatal(err)
	}
	o := defaults()
	o.recv = srq
	a, b := newCore(t, table, o), newCore(t, table, o)
	pa, pb := newPeer(t, o), newPeer(t, o)
	rxAll(a, pa.frame(cat(untagged(3, true, 0, 0, 1, 0), []byte("to-a"))), 100)
	rxAll(b, pb.frame(untagged(3, true, 0, 0, 1, 0)), 100)
	ca, cb := poll(a), poll(b)
	wantComps(t, ca, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}})
	wantComps(t, cb, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 2}})
	if !bytes.Equal(buf.Bytes()[:4], []byte("to-a")) {
		t.Fatal("not placed")
	}
	a.Close()
	if len(poll(a)) != 0 || srq.r.Posted() != 1 {
		t.Fatalf("the flush took the shared queue's receives (%d left)", srq.r.Posted())
	}
	if _, err := srq.r.Post([]RecvWR{{ID: 4}, {ID: 5}}); !errors.Is(err, ErrRQFull) {
		t.Fatalf("slots freed before their completions were consumed: %v", err)
	}
	srq.r.Release(ca[0].Slot)
	if _, err := srq.r.Post([]RecvWR{{ID: 4}}); err != nil {
		t.Fatal(err)
	}
}

// TestReceivesPostedBeforeConnect: a receive ring the shell filled before
// the connection was up becomes the core's own queue: its receives are
// used, posted to and flushed like those of a queue the core made.
func TestReceivesPostedBeforeConnect(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	ring := NewRecvRing(2, 1, table, testPD)
	if _, err := ring.Post([]RecvWR{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Table: table, PD: testPD, SQDepth: 1, MaxSGE: 1, OwnRecv: ring, Framing: defaults().framing})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PostRecv([]RecvWR{{ID: 2}}); err != nil {
		t.Fatal(err)
	}
	p := newPeer(t, defaults())
	rxAll(c, p.frame(untagged(3, true, 0, 0, 1, 0)), 100)
	c.Close()
	wantComps(t, poll(c), Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 2, Status: rdma.StatusFlushed}})
}

// TestCompletionsCarryQPNum: send and receive completions, flushed ones
// included, carry the QP number of Config.QPNum.
func TestCompletionsCarryQPNum(t *testing.T) {
	table := mem.NewTable(mem.TableOptions{})
	buf := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	o := defaults()
	c, err := New(Config{Table: table, PD: testPD, QPNum: 0x1234, SQDepth: o.sq, RQDepth: o.rq, MaxSGE: o.maxSGE,
		Framing: o.framing, Params: Params{IRD: o.ird, ORD: o.ord, MULPDU: o.mulpdu}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPeer(t, o)
	if _, err := c.PostRecv([]RecvWR{{ID: 1, SGL: []rdma.SGE{sge(buf)}}, {ID: 2}}); err != nil {
		t.Fatal(err)
	}
	post(t, c, SendWR{ID: 3, Op: rdma.OpSend, Flags: rdma.Signaled})
	txAll(c)
	rxAll(c, p.frame(cat(untagged(3, true, 0, 0, 1, 0), []byte("qp"))), 100)
	c.Close()
	got := poll(c)
	wantComps(t, got, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 3}},
		Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}},
		Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 2, Status: rdma.StatusFlushed}})
	for _, g := range got {
		if g.QPNum != 0x1234 {
			t.Fatalf("completion %+v: QPNum %#x, want 0x1234", g, g.QPNum)
		}
	}
}
