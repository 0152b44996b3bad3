package rdmap

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview6EveryVariantEndToEnd: every opcode-and-flags variant that
// rdma.ValidFlags accepts for the operations that reach the peer's
// receive queue (Send, Write, Immediate), with and without Inline and
// Fence, with payloads of 0 bytes, a few bytes (copied) and several FPDUs
// (leased), SGLs with zero-length SGEs among them, goes between two cores:
// the receiver's completion must carry exactly the variant's
// Solicited, Immediate, Invalidated and length, the bytes must land, and
// a plain Send after it must be accepted (the MSN accounting of QN 0
// matched on both sides).
func TestReview6EveryVariantEndToEnd(t *testing.T) {
	for _, op := range []rdma.Opcode{rdma.OpSend, rdma.OpWrite, rdma.OpImmediate} {
		for _, mods := range []rdma.SendFlags{0, rdma.Solicited, rdma.Invalidate, rdma.WithImmediate,
			rdma.Solicited | rdma.Invalidate, rdma.Solicited | rdma.WithImmediate, rdma.Invalidate | rdma.WithImmediate,
			rdma.Solicited | rdma.Invalidate | rdma.WithImmediate} {
			if !rdma.ValidFlags(op, mods) {
				continue
			}
			for _, extra := range []rdma.SendFlags{0, rdma.Inline, rdma.Fence} {
				for _, size := range []int{0, 5, 3000} {
					if op == rdma.OpImmediate && size > 0 || extra == rdma.Inline && size > 64 {
						continue
					}
					name := fmt.Sprintf("%v-%06b-%06b-%d", op, mods, extra, size)
					t.Run(name, func(t *testing.T) { review6Variant(t, op, mods|extra|rdma.Signaled, size) })
				}
			}
		}
	}
}

func review6Variant(t *testing.T, op rdma.Opcode, flags rdma.SendFlags, size int) {
	table := mem.NewTable(mem.TableOptions{})
	o := defaults()
	o.v2 = true
	a, b := newCore(t, table, o), newCore(t, table, o)
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	srcR := region(t, table, testPD, size+16, 0, 0)
	copy(srcR.Bytes()[8:], src)
	// The payload in two pieces with zero-length SGEs around them, one
	// of them at the region's very end.
	half := uint32(size / 2)
	sgl := []rdma.SGE{
		{STag: stagOf(srcR), Offset: 8, Length: 0},
		{STag: stagOf(srcR), Offset: 8, Length: half},
		{STag: stagOf(srcR), Offset: uint64(srcR.Len()), Length: 0},
		{STag: stagOf(srcR), Offset: 8 + uint64(half), Length: uint32(size) - half},
	}
	if op == rdma.OpImmediate {
		sgl = nil
	}
	dst := region(t, table, testPD, 4096, 0, mem.AccessLocalWrite|mem.AccessRemoteWrite)
	recvBuf := region(t, table, testPD, 4096, 0, mem.AccessLocalWrite)
	tail := region(t, table, testPD, 16, 0, mem.AccessLocalWrite)
	victim := region(t, table, testPD, 16, 0, mem.AccessRemoteInvalidate|mem.AccessRemoteWrite)
	if _, err := b.PostRecv([]RecvWR{{ID: 1, SGL: []rdma.SGE{sge(recvBuf)}}, {ID: 2, SGL: []rdma.SGE{sge(tail)}}}); err != nil {
		t.Fatal(err)
	}
	imm := uint64(0x1122334455667788)
	wr := SendWR{ID: 10, Op: op, Flags: flags, SGL: sgl, Immediate: imm, InvalidateSTag: stagOf(victim),
		Remote: rdma.RemoteBuffer{STag: stagOf(dst), TO: dst.Base()}}
	if _, err := a.PostSend([]SendWR{wr, {ID: 11, Op: rdma.OpSend, Flags: rdma.Signaled}}); err != nil {
		t.Fatal(err)
	}
	// The caller's SGL is the caller's again: scribble over it.
	for i := range sgl {
		sgl[i] = rdma.SGE{STag: stagOf(dst), Length: 1}
	}
	pump(a, b, 700)
	wantComps(t, poll(a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 10}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 11}})
	got := poll(b)
	consumes := op != rdma.OpWrite || flags&rdma.WithImmediate != 0
	want := []Completion{{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}}, {Queue: RecvQueue, Completion: rdma.Completion{ID: 2}}}
	if !consumes {
		want = []Completion{{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}}} // the plain Send took receive 1
	}
	wantComps(t, got, want...)
	if !consumes {
		if !bytes.Equal(dst.Bytes()[:size], src) {
			t.Fatal("the Write's bytes did not land")
		}
		return
	}
	c := got[0]
	if c.Solicited != (flags&rdma.Solicited != 0) {
		t.Errorf("Solicited %v", c.Solicited)
	}
	if wantImm := flags&rdma.WithImmediate != 0 || op == rdma.OpImmediate; c.HasImmediate != wantImm || wantImm && c.Immediate != imm {
		t.Errorf("immediate %v %#x", c.HasImmediate, c.Immediate)
	}
	inv := flags&rdma.Invalidate != 0
	if inv != (c.Invalidated == stagOf(victim)) || inv == victim.Valid() {
		t.Errorf("Invalidated %#x, victim valid %v", c.Invalidated, victim.Valid())
	}
	switch {
	case op == rdma.OpImmediate:
		if c.Len != 8 { // placed in the receive buffer too (RFC 7306 §6)
			t.Errorf("Len %d", c.Len)
		}
	case op == rdma.OpWrite:
		if c.Len != 8 || !bytes.Equal(dst.Bytes()[:size], src) { // the Immediate Data
			t.Errorf("Len %d, Write data landed %v", c.Len, bytes.Equal(dst.Bytes()[:size], src))
		}
	default:
		if c.Len != size || !bytes.Equal(recvBuf.Bytes()[:size], src) {
			t.Errorf("Len %d, data landed %v", c.Len, bytes.Equal(recvBuf.Bytes()[:size], src))
		}
	}
	if got[1].Len != 0 || got[1].Status != rdma.StatusSuccess {
		t.Errorf("the plain Send after it: %+v", got[1])
	}
}
