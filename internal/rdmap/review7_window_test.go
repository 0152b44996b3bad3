package rdmap

import (
	"bytes"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Review 7: accesses through a memory window at its edges and across its
// unbind, one segment (and part of one) at a time.

// TestReview7WindowWriteEdges: a Write whose last segment ends exactly at
// the window's end lands; one whose later segment ends one byte past it
// is refused with DDP/1/0x01 before any byte of that segment is placed,
// the earlier segment having landed.
func TestReview7WindowWriteEdges(t *testing.T) {
	for _, past := range []bool{false, true} {
		c, p, table := single(t, defaults())
		parent := region(t, table, testPD, 256, 0, bindParentAccess)
		w, _ := table.AllocWindow(testPD, mem.WindowType1)
		base := parent.Base() + 64
		s, err := table.Bind(w, parent, base, 64, mem.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		n2 := 32
		if past {
			n2 = 33
		}
		rxAll(c, p.frame(cat(tagged(byte(wire.OpWrite), false, uint32(s), base), bytes.Repeat([]byte{1}, 32)),
			cat(tagged(byte(wire.OpWrite), true, uint32(s), base+32), bytes.Repeat([]byte{2}, n2))), 1<<20)
		want := make([]byte, 256)
		copy(want[64:96], bytes.Repeat([]byte{1}, 32))
		var te *TerminateError
		if past {
			if !errors.As(c.Err(), &te) || te.Code != rdma.TermDDPBaseBounds {
				t.Fatalf("one byte past: %v", c.Err())
			}
		} else {
			copy(want[96:128], bytes.Repeat([]byte{2}, 32))
			if c.Err() != nil {
				t.Fatalf("to the end: %v", c.Err())
			}
		}
		if !bytes.Equal(parent.Bytes(), want) {
			t.Fatalf("past %v: parent % x", past, parent.Bytes())
		}
	}
}

// TestReview7WindowUnbindMidSegment: the window is unbound while a Write
// segment's payload is arriving: the unbind drains at once (no pin is
// held across a wait on the peer), and not one byte of the rest lands.
func TestReview7WindowUnbindMidSegment(t *testing.T) {
	for _, chunk := range []int{1, 7, 40} {
		c, p, table := single(t, defaults())
		parent := region(t, table, testPD, 256, 0, bindParentAccess)
		w, _ := table.AllocWindow(testPD, mem.WindowType2)
		s, err := table.Bind(w, parent, parent.Base(), 128, mem.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		stream := p.frame(cat(tagged(byte(wire.OpWrite), true, uint32(s), parent.Base()), bytes.Repeat([]byte{9}, 100)))
		head := 2 + 14 + 20 // MPA length, DDP/RDMAP header, 20 payload octets
		took := rxAll(c, stream[:head], chunk)
		if took != head {
			t.Fatalf("took %d", took)
		}
		inv := table.BeginUnbind(w)
		if !inv.Drained() {
			t.Fatalf("chunk %d: the unbind waits for a pin held across a wait on the peer", chunk)
		}
		landed := append([]byte(nil), parent.Bytes()...)
		rxAll(c, stream[head:], chunk)
		if !bytes.Equal(parent.Bytes(), landed) {
			t.Fatalf("chunk %d: bytes landed after the unbind drained", chunk)
		}
		if c.State() == rdma.StateRTS {
			t.Fatalf("chunk %d: the Write's lost placement did not fail the QP", chunk)
		}
	}
}

// TestReview7BindFlushedAfterItRan: a type 2 bind WR whose window's old
// binding is still draining (a Read Response another QP sends from it)
// binds at once and defers its completion. If this QP then fails, the
// completion must not report the bind as not done (flushed) while the
// window stays bound under a new STag: the application, told the bind did
// not happen, would never unbind a window that exposes its parent.
//
// The fix is bind.go's undoBind, which stopDrains (complete.go) must call
// for a bind WR before it reports it flushed: until it does, the test is
// skipped.
func TestReview7BindFlushedAfterItRan(t *testing.T) {
	o := defaults()
	o.framing.CRC = false // the response's octets are referenced, not copied
	x, p, table := single(t, o)
	c := newCore(t, table, defaults())
	parent := region(t, table, testPD, 64<<10, 3, bindParentAccess)
	w, _ := table.AllocWindow(testPD, mem.WindowType2)
	s1, err := table.Bind(w, parent, parent.Base(), 64<<10, mem.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	// x holds a lease on the old binding: a Read Response it has not sent.
	rxAll(x, p.frame(cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x6600, 0, 64<<10, uint32(s1), parent.Base()))), 1<<20)
	bufs := x.TxBufs(nil)
	old := table.BeginUnbind(w)
	if old.Drained() {
		t.Fatal("the unbind did not wait for the response")
	}
	post(t, c, bindWR(5, w, parent, 0, 64, mem.AccessRemoteRead))
	c.TxBufs(nil) // runs the bind
	if !w.Bound() {
		t.Fatal("the bind did not run")
	}
	c.Close()
	got := poll(c)
	if len(got) != 1 || got[0].ID != 5 {
		t.Fatalf("completions %+v", got)
	}
	if got[0].Status != rdma.StatusSuccess && w.Bound() {
		t.Fatalf("the bind WR completed %v (%v), yet the window is bound under %#x", got[0].Status, got[0].Err, uint32(w.STag()))
	}
	x.TxDone(bufsLen(bufs))
	txAll(x)
}

// TestReview7UndoBind: undoBind ends the binding the bind WR made (its
// entry's Window is the new STag once the bind ran), and nothing else: not
// a later binding of the window.
func TestReview7UndoBind(t *testing.T) {
	o := defaults()
	o.framing.CRC = false
	c, p, table := single(t, o)
	parent := region(t, table, testPD, 64<<10, 3, bindParentAccess)
	w, _ := table.AllocWindow(testPD, mem.WindowType2)
	s1, err := table.Bind(w, parent, parent.Base(), 64<<10, mem.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	rxAll(c, p.frame(cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x6600, 0, 64<<10, uint32(s1), parent.Base()))), 1<<20)
	bufs := c.TxBufs(nil)
	table.BeginUnbind(w)
	post(t, c, bindWR(5, w, parent, 0, 64, mem.AccessRemoteRead))
	seq := c.sqTail - 1
	c.TxDone(bufsLen(bufs) / 2)
	c.TxBufs(nil) // runs the bind; its completion waits
	e := c.entry(seq)
	if !w.Bound() || e.wr.Window != uint32(w.STag()) || e.inv == nil {
		t.Fatalf("after the bind: bound %v, entry's Window %#x, window %#x", w.Bound(), e.wr.Window, uint32(w.STag()))
	}
	c.undoBind(e)
	if w.Bound() {
		t.Fatal("undoBind left the window bound")
	}
	s3, err := table.Bind(w, parent, parent.Base(), 8, mem.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	c.undoBind(e)
	if !w.Bound() || w.STag() != s3 {
		t.Fatal("undoBind ended a later binding")
	}
	txAll(c)
}
