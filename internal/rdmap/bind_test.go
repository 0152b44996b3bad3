package rdmap

import (
	"bytes"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// Memory window binds by work request (bind.go).

const bindParentAccess = mem.AccessLocalWrite | mem.AccessMWBind

// bindWR is a signaled bind WR of w to n bytes at off of parent.
func bindWR(id uint64, w *mem.Window, parent *mem.Region, off uint64, n uint32, acc mem.Access) SendWR {
	return SendWR{ID: id, Op: rdma.OpBindWindow, Flags: rdma.Signaled, Window: uint32(w.STag()), Access: acc,
		SGL: []rdma.SGE{{STag: stagOf(parent), Offset: off, Length: n}}}
}

// TestBindWindowSQOrder: a bind WR runs when it reaches the head of the
// send queue, after the message posted before it has been built; the
// window's STag works for the peer once the bind completed, and a peer's
// Write that named the window before then is refused.
func TestBindWindowSQOrder(t *testing.T) {
	p := newOpPair(t, defaults())
	parent := region(t, p.table, testPD, 4096, 0, bindParentAccess)
	w, err := p.table.AllocWindow(testPD, mem.WindowType2)
	if err != nil {
		t.Fatal(err)
	}
	src := region(t, p.table, testPD, 1<<20, 'b', 0)
	dst := region(t, p.table, testPD, 1<<20, 0, mem.AccessRemoteWrite) // A's
	post(t, p.b, SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}, Remote: rdma.RemoteBuffer{STag: stagOf(dst), TO: dst.Base()}},
		bindWR(2, w, parent, 512, 256, mem.AccessRemoteWrite|mem.AccessRemoteRead))
	bufs := p.b.TxBufs(nil) // the Write's first FPDUs; the bind waits behind it
	if w.Bound() {
		t.Fatal("the bind ran before the Write ahead of it")
	}
	p.b.TxDone(bufsLen(bufs))
	pump(p.a, p.b, 65536)
	if !w.Bound() {
		t.Fatal("the bind did not run after the Write")
	}
	got := poll(p.b)
	wantComps(t, got, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
	if got[1].Op != rdma.OpBindWindow {
		t.Fatalf("bind completion %+v", got[1])
	}
	// The peer writes through the window's new STag: the bytes land in the
	// parent's range.
	data := region(t, p.table, testPD, 16, 'W', 0)
	post(t, p.a, SendWR{ID: 3, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(data)},
		Remote: rdma.RemoteBuffer{STag: uint32(w.STag()), TO: parent.Base() + 600}})
	pump(p.a, p.b, 65536)
	if !bytes.Equal(parent.Bytes()[600:616], data.Bytes()) || p.b.State() != rdma.StateRTS {
		t.Fatalf("Write through the window: % x, state %v (%v)", parent.Bytes()[600:616], p.b.State(), p.b.Err())
	}
}

// TestBindWindowPeerBeforeBind: the peer's Write naming the window before
// the bind WR ran is refused with the invalid-STag Terminate.
func TestBindWindowPeerBeforeBind(t *testing.T) {
	p := newOpPair(t, defaults())
	parent := region(t, p.table, testPD, 4096, 0, bindParentAccess)
	w, _ := p.table.AllocWindow(testPD, mem.WindowType2)
	post(t, p.b, bindWR(1, w, parent, 0, 64, mem.AccessRemoteWrite))
	data := region(t, p.table, testPD, 16, 'W', 0)
	post(t, p.a, SendWR{ID: 2, Op: rdma.OpWrite, SGL: []rdma.SGE{sge(data)}, Remote: rdma.RemoteBuffer{STag: uint32(w.STag()), TO: parent.Base()}})
	rxAll(p.b, txAll(p.a), 65536) // B receives the Write before it runs its send queue
	var te *TerminateError
	if !errors.As(p.b.Err(), &te) || te.Code != rdma.TermDDPInvalidSTag || !bytes.Equal(parent.Bytes()[:16], make([]byte, 16)) {
		t.Fatalf("B's error %v", p.b.Err())
	}
}

// TestBindWindowFailures: what a bind WR may not do. The WR's shape and
// its SGE are checked at post; the window's and the region's state when
// the WR runs, which completes it with a local protection error and
// leaves the QP in RTS.
func TestBindWindowFailures(t *testing.T) {
	c, _, table := single(t, defaults())
	parent := region(t, table, testPD, 4096, 0, bindParentAccess)
	w, _ := table.AllocWindow(testPD, mem.WindowType2)
	for _, x := range []struct {
		name string
		wr   SendWR
		want error
	}{
		{"no-SGE", SendWR{Op: rdma.OpBindWindow, Window: uint32(w.STag())}, ErrBindSGE},
		{"two-SGEs", SendWR{Op: rdma.OpBindWindow, Window: uint32(w.STag()), SGL: []rdma.SGE{sge(parent), sge(parent)}}, ErrBindSGE},
		{"zero-length", bindWR(1, w, parent, 0, 0, mem.AccessRemoteRead), ErrBindSGE},
		{"not-a-window", SendWR{Op: rdma.OpBindWindow, Window: stagOf(parent), SGL: []rdma.SGE{sge(parent)}}, ErrBindNoWindow},
		{"outside-the-region", bindWR(1, w, parent, 4000, 200, mem.AccessRemoteRead), ErrBadSGE},
		{"region-of-another-PD", bindWR(1, w, region(t, table, testPD+1, 64, 0, bindParentAccess), 0, 8, mem.AccessRemoteRead), ErrPD},
		{"with-Solicited", func() SendWR { wr := bindWR(1, w, parent, 0, 8, 0); wr.Flags |= rdma.Solicited; return wr }(), ErrBadOp},
	} {
		if _, err := c.PostSend([]SendWR{x.wr}); !errors.Is(err, x.want) {
			t.Errorf("%s: post %v, want %v", x.name, err, x.want)
		}
	}

	w1, _ := table.AllocWindow(testPD, mem.WindowType1)
	wOther, _ := table.AllocWindow(testPD+1, mem.WindowType2)
	bound, _ := table.AllocWindow(testPD, mem.WindowType2)
	if _, err := table.Bind(bound, parent, parent.Base(), 64, mem.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	stale, _ := table.AllocWindow(testPD, mem.WindowType2)
	staleWR := bindWR(7, stale, parent, 0, 8, mem.AccessRemoteRead)
	if _, err := table.Bind(stale, parent, parent.Base(), 8, mem.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	table.BeginUnbind(stale)
	noBind := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	noLocalWrite := region(t, table, testPD, 64, 0, mem.AccessMWBind)
	invalidated := region(t, table, testPD, 64, 0, bindParentAccess)
	invWR := bindWR(10, w, invalidated, 0, 8, mem.AccessRemoteRead)
	cases := []struct {
		wr   SendWR
		want error
	}{
		{bindWR(1, w1, parent, 0, 8, mem.AccessRemoteRead), ErrBindType},
		{bindWR(2, wOther, parent, 0, 8, mem.AccessRemoteRead), ErrBindPD},
		{bindWR(3, bound, parent, 64, 8, mem.AccessRemoteRead), mem.ErrWindowBound},
		{bindWR(4, w, noBind, 0, 8, mem.AccessRemoteRead), mem.ErrNoMWBind},
		{bindWR(5, w, noLocalWrite, 0, 8, mem.AccessRemoteWrite), mem.ErrWindowLocalWrite},
		{bindWR(6, w, parent, 0, 8, mem.AccessLocalWrite), mem.ErrWindowAccess},
		{staleWR, ErrBindSTag},
		{bindWR(8, w, parent, 4, 16, mem.AccessRemoteAtomic), mem.ErrAtomicAligned},
		{invWR, mem.ErrParentInvalid}, // invalidated after the post, below
	}
	var wrs []SendWR
	for _, x := range cases {
		wrs = append(wrs, x.wr)
	}
	wrs = append(wrs, SendWR{ID: 11, Op: rdma.OpSend, Flags: rdma.Signaled})
	post(t, c, wrs...)
	table.BeginInvalidate(invalidated, invalidated.STag())
	txAll(c)
	got := poll(c)
	if len(got) != len(cases)+1 {
		t.Fatalf("%d completions, want %d: %+v", len(got), len(cases)+1, got)
	}
	for i, x := range cases {
		g := got[i]
		if g.ID != x.wr.ID || g.Status != rdma.StatusLocalProtection || g.Op != rdma.OpBindWindow || !errors.Is(g.Err, ErrBindWindow) || !errors.Is(g.Err, x.want) {
			t.Errorf("WR %d: %+v, want a local protection error matching %v", x.wr.ID, g, x.want)
		}
	}
	if got[len(cases)].Status != rdma.StatusSuccess || c.State() != rdma.StateRTS {
		t.Fatalf("after the failed binds: %+v, state %v", got[len(cases)], c.State())
	}
	if w.Bound() || w1.Bound() || wOther.Bound() || stale.Bound() {
		t.Fatal("a failed bind bound a window")
	}
}

// TestBindWindowLocalInvalidateSQOrder: a Local Invalidate of a window runs
// in send-queue order, after the message ahead of it; the window is then
// unbound and the peer's Write through it is refused.
func TestBindWindowLocalInvalidateSQOrder(t *testing.T) {
	p := newOpPair(t, defaults())
	parent := region(t, p.table, testPD, 4096, 0, bindParentAccess)
	w, _ := p.table.AllocWindow(testPD, mem.WindowType2)
	post(t, p.b, bindWR(1, w, parent, 0, 4096, mem.AccessRemoteWrite))
	pump(p.a, p.b, 65536)
	wantComps(t, poll(p.b), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}})
	src := region(t, p.table, testPD, 1<<20, 'b', 0)
	dst := region(t, p.table, testPD, 1<<20, 0, mem.AccessRemoteWrite) // A's
	post(t, p.b, SendWR{ID: 2, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}, Remote: rdma.RemoteBuffer{STag: stagOf(dst), TO: dst.Base()}},
		SendWR{ID: 3, Op: rdma.OpLocalInvalidate, Flags: rdma.Signaled, InvalidateSTag: uint32(w.STag())})
	bufs := p.b.TxBufs(nil)
	if !w.Bound() {
		t.Fatal("the Local Invalidate ran before the Write ahead of it")
	}
	p.b.TxDone(bufsLen(bufs))
	pump(p.a, p.b, 65536)
	if w.Bound() {
		t.Fatal("the Local Invalidate did not unbind the window")
	}
	wantComps(t, poll(p.b), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 3}})
	data := region(t, p.table, testPD, 16, 'W', 0)
	post(t, p.a, SendWR{ID: 4, Op: rdma.OpWrite, SGL: []rdma.SGE{sge(data)}, Remote: rdma.RemoteBuffer{STag: uint32(w.STag()), TO: parent.Base()}})
	pump(p.a, p.b, 65536)
	var te *TerminateError
	if !errors.As(p.b.Err(), &te) || te.Code != rdma.TermDDPInvalidSTag || !bytes.Equal(parent.Bytes()[:16], make([]byte, 16)) {
		t.Fatalf("Write through the invalidated window: B's error %v", p.b.Err())
	}
}

// TestBindWindowWaitsForOldBinding: a type 2 window unbound while a Read
// Response through it is still referenced binds again at once (its new
// STag is valid), but the bind's completion waits until no byte moves
// through the old binding; nothing blocks.
func TestBindWindowWaitsForOldBinding(t *testing.T) {
	o := defaults()
	o.framing.CRC = false // the response's octets are referenced, not copied
	c, p, table := single(t, o)
	parent := region(t, table, testPD, 64<<10, 3, bindParentAccess)
	w, _ := table.AllocWindow(testPD, mem.WindowType2)
	s1, err := table.Bind(w, parent, parent.Base(), 64<<10, mem.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	rxAll(c, p.frame(cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x6600, 0, 64<<10, uint32(s1), parent.Base()))), 1<<20)
	bufs := c.TxBufs(nil) // the response, referenced, not yet written
	old := table.BeginUnbind(w)
	if old.Drained() {
		t.Fatal("the unbind did not wait for the response")
	}
	post(t, c, bindWR(5, w, parent, 0, 64, mem.AccessRemoteRead))
	c.TxDone(bufsLen(bufs) / 2)
	c.TxBufs(nil) // runs the bind
	if !w.Bound() || w.STag() == s1 {
		t.Fatal("the bind did not run at once")
	}
	if got := poll(c); len(got) != 0 {
		t.Fatalf("the bind completed while the old binding's bytes are referenced: %+v", got)
	}
	txAll(c)
	if !old.Drained() {
		t.Fatal("the old binding did not drain")
	}
	wantComps(t, poll(c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 5}})
}
