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
