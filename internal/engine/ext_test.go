package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/vectors"
	"github.com/goiwarp/iwarp/internal/wire"
)

// atomicTarget registers an 8-byte aligned target of n words.
func atomicTarget(t *testing.T, s *side, words int) (*mem.Region, []uint64) {
	t.Helper()
	w := make([]uint64, words)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), words*8)
	r, err := s.table.Register(s.pd, b, mem.AccessRemoteAtomic|mem.AccessRemoteWrite, 0x8000)
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// TestAtomicsVectorsRemote runs every row of internal/vectors/testdata/atomics.tsv as a
// remote atomic over loopback: returned original and final memory match.
func TestAtomicsVectorsRemote(t *testing.T) {
	rows, err := vectors.ReadAtomics("../vectors/testdata/" + vectors.AtomicsFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 90 {
		t.Fatalf("only %d rows", len(rows))
	}
	o := pairOpts{crc: true, ord: 4, ird: 4, ext: true, depth: 8}
	var target *mem.Region
	var words []uint64
	a, _, _ := startedPair(t, o, func(a, b *side) { target, words = atomicTarget(t, b, 4) })
	res, _, _ := a.register(t, 8, mem.AccessLocalWrite)
	for i, v := range rows {
		slot := i % 4
		atomic.StoreUint64(&words[slot], v.Original) // atomics never race with atomics
		wr := SendWR{ID: uint64(i), Flags: Signaled, SGL: []SGE{{Region: res, Len: 8}},
			RemoteSTag: uint32(target.STag()), RemoteTO: target.Base() + uint64(8*slot), Data: v.Data, Mask: v.Mask}
		if v.Op == "cmpswap" {
			wr.Op, wr.Compare, wr.CompareMask = OpCmpSwap, v.Compare, v.CompareMask
		} else {
			wr.Op = OpFetchAdd
		}
		if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		cqe := waitCQE(t, a.scq)
		if cqe.Status != StatusSuccess || cqe.Original != v.Original {
			t.Fatalf("%+v: completion %+v", v, cqe)
		}
		if got := binary.NativeEndian.Uint64(res.Bytes()); got != v.Original {
			t.Fatalf("%+v: result buffer %x", v, got)
		}
		if got := atomic.LoadUint64(&words[slot]); got != v.Result {
			t.Fatalf("%+v: target holds %x", v, got)
		}
	}
}

// TestImmediateData: Immediate Data (and with SE) consumes a receive, the 8
// bytes arrive in the completion, and in the buffer when it holds 8 bytes.
func TestImmediateData(t *testing.T) {
	o := pairOpts{crc: true, ext: true}
	var big, zero *mem.Region
	a, b, _ := startedPair(t, o, func(a, b *side) {
		big, _, _ = b.register(t, 16, mem.AccessLocalWrite)
		zero, _, _ = b.register(t, 1, mem.AccessLocalWrite)
		if _, err := b.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: big, Len: 16}}}, {ID: 2, SGL: []SGE{{Region: zero, Len: 0}}}}); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := a.qp.PostSend([]SendWR{{ID: 1, Op: OpImmediate, Imm: 0xc0ffee0001020304}, {ID: 2, Op: OpImmediateSE, Imm: 7}}); err != nil {
		t.Fatal(err)
	}
	c1, c2 := waitCQE(t, b.rcq), waitCQE(t, b.rcq)
	if c1.ID != 1 || c1.Flags&HasImm == 0 || c1.Imm != 0xc0ffee0001020304 || c1.Len != 8 || c1.Flags&Solicited != 0 {
		t.Fatalf("first %+v", c1)
	}
	if !bytes.Equal(big.Bytes()[:8], []byte{0xc0, 0xff, 0xee, 0, 1, 2, 3, 4}) {
		t.Fatalf("buffer % x", big.Bytes()[:8])
	}
	if c2.ID != 2 || c2.Imm != 7 || c2.Len != 0 || c2.Flags&Solicited == 0 {
		t.Fatalf("second %+v", c2)
	}
}

// TestWriteWithImmediate: the sink's immediate completion comes after the
// Write is placed; -race checks the ordering.
func TestWriteWithImmediate(t *testing.T) {
	o := pairOpts{crc: true, ext: true}
	var dst, note *mem.Region
	var dbuf []byte
	a, b, _ := startedPair(t, o, func(a, b *side) {
		dst, dbuf, _ = b.register(t, 1<<20, mem.AccessRemoteWrite)
		note, _, _ = b.register(t, 1, mem.AccessLocalWrite)
		if _, err := b.qp.PostRecv([]RecvWR{{ID: 5, SGL: []SGE{{Region: note, Len: 0}}}}); err != nil {
			t.Fatal(err)
		}
	})
	src := newSGL(t, a, 1<<20, 3, 0, 9)
	if _, err := a.qp.PostSend([]SendWR{{ID: 1, Op: OpWriteImmSE, Flags: Signaled, SGL: src.sges,
		RemoteSTag: uint32(dst.STag()), RemoteTO: dst.Base(), Imm: 42}}); err != nil {
		t.Fatal(err)
	}
	if c := waitCQE(t, a.scq); c.Status != StatusSuccess || c.Op != OpWriteImmSE {
		t.Fatalf("requester %+v", c)
	}
	c := waitCQE(t, b.rcq)
	if c.ID != 5 || c.Imm != 42 || c.Flags&Solicited == 0 {
		t.Fatalf("sink %+v", c)
	}
	if !bytes.Equal(dbuf, src.message()) {
		t.Fatal("the Write was not placed when its immediate completed")
	}
}

// TestRFC7306NotNegotiated: without the extension nothing RFC 7306 is
// posted, and nothing reaches the wire.
func TestRFC7306NotNegotiated(t *testing.T) {
	o := pairOpts{crc: true}
	a, _, _ := startedPair(t, o, nil)
	for _, op := range []Op{OpFetchAdd, OpCmpSwap, OpImmediate, OpImmediateSE, OpWriteImm, OpWriteImmSE} {
		if _, err := a.qp.PostSend([]SendWR{{Op: op, RemoteSTag: 1}}); !errors.Is(err, ErrNotSupportedByPeer) {
			t.Errorf("%v: %v", op, err)
		}
	}
}

// Terminates for bad RFC 7306 input, with the bytes on the wire: the DDP
// header attached (M, D), no RDMA header (RFC 7306 §8.1).
func TestAtomicTerminates(t *testing.T) {
	type tc struct {
		name  string
		build func(good, noAtomic, other *mem.Region) []byte
		code  wire.TermCode
	}
	req := func(msn uint32, aop uint32, stag uint32, to uint64) []byte {
		b := untagged(0xA, true, 0, 1, msn, 0)
		b = binary.BigEndian.AppendUint32(b, aop)
		b = binary.BigEndian.AppendUint32(b, 0x1234)
		b = binary.BigEndian.AppendUint32(b, stag)
		b = binary.BigEndian.AppendUint64(b, to)
		b = binary.BigEndian.AppendUint64(b, 1)
		b = binary.BigEndian.AppendUint64(b, 0)
		b = binary.BigEndian.AppendUint64(b, 0)
		return binary.BigEndian.AppendUint64(b, ^uint64(0))
	}
	cases := []tc{
		{"misaligned/RDMAP-2-0x07", func(g, n, o *mem.Region) []byte { return req(1, 0, uint32(g.STag()), g.Base()+4) }, wire.TermRDMAPStreamCatastroph},
		{"invalid-STag/RDMAP-1-0x00", func(g, n, o *mem.Region) []byte { return req(1, 0, uint32(g.STag())^1, g.Base()) }, wire.TermRDMAPInvalidSTag},
		{"other-PD/RDMAP-1-0x03", func(g, n, o *mem.Region) []byte { return req(1, 0, uint32(o.STag()), o.Base()) }, wire.TermRDMAPSTagNotAssoc},
		{"no-atomic-access/RDMAP-1-0x02", func(g, n, o *mem.Region) []byte { return req(1, 0, uint32(n.STag()), n.Base()) }, wire.TermRDMAPAccessRights},
		{"out-of-bounds/RDMAP-1-0x01", func(g, n, o *mem.Region) []byte { return req(1, 0, uint32(g.STag()), g.Base()+32) }, wire.TermRDMAPBaseBounds},
		{"unknown-AOpCode/RDMAP-2-0x06", func(g, n, o *mem.Region) []byte { return req(1, 1, uint32(g.STag()), g.Base()) }, wire.TermRDMAPUnexpectedOpcode},
		{"immediate-7-bytes/RDMAP-2-0xFF", func(g, n, o *mem.Region) []byte { return cat(untagged(8, true, 0, 0, 1, 0), make([]byte, 7)) }, wire.TermRDMAPOpUnspecified},
		{"immediate-9-bytes/RDMAP-2-0xFF", func(g, n, o *mem.Region) []byte { return cat(untagged(9, true, 0, 0, 1, 0), make([]byte, 9)) }, wire.TermRDMAPOpUnspecified},
		{"atomic-response-unsolicited/RDMAP-2-0x06", func(g, n, o *mem.Region) []byte {
			return cat(untagged(0xB, true, 0, 3, 1, 0), make([]byte, 12))
		}, wire.TermRDMAPUnexpectedOpcode},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := pairOpts{crc: true, ird: 2}
			var good, noAtomic, other *mem.Region
			var words []uint64
			a, peer := rawSide(t, o, func(a *side) {
				good, words = atomicTarget(t, a, 4)
				noAtomic, _, _ = a.register(t, 64, mem.AccessRemoteWrite)
				var err error
				w := make([]uint64, 4)
				other, err = a.table.Register(a.pd+1, unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 32), mem.AccessRemoteAtomic, 0)
				if err != nil {
					t.Fatal(err)
				}
				r, _, _ := a.register(t, 64, mem.AccessLocalWrite)
				if _, err := a.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: r, Len: 64}}}}); err != nil {
					t.Fatal(err)
				}
			})
			for i := range words {
				atomic.StoreUint64(&words[i], 0x1111)
			}
			bad := c.build(good, noAtomic, other)
			peer.send(t, bad)
			got, _ := peer.readUntilTerminate(t)
			assertTerminate(t, got, c.code, bad, 18, false)
			<-a.qp.Done()
			for i := range words {
				if v := atomic.LoadUint64(&words[i]); v != 0x1111 {
					t.Fatalf("target word %d changed to %x", i, v)
				}
			}
		})
	}
}

// TestAtomicResponseWrongID: an Atomic Response whose identifier is not the
// outstanding request's fails the stream (RDMAP/2/0xFF) and the atomic.
func TestAtomicResponseWrongID(t *testing.T) {
	o := pairOpts{crc: true, ord: 1, ext: true}
	a, peer := rawSide(t, o, nil)
	if _, err := a.qp.PostSend([]SendWR{{ID: 4, Op: OpFetchAdd, Flags: Signaled, RemoteSTag: 5, RemoteTO: 0x1000, Data: 1}}); err != nil {
		t.Fatal(err)
	}
	rq := peer.readULPDU(t)
	if rq[1]&0x0f != 0xA || len(rq) != 18+52 {
		t.Fatalf("not an Atomic Request: % x", rq)
	}
	id := binary.BigEndian.Uint32(rq[22:])
	bad := cat(untagged(0xB, true, 0, 3, 1, 0), binary.BigEndian.AppendUint32(nil, id+1), make([]byte, 8))
	peer.send(t, bad)
	got, _ := peer.readUntilTerminate(t)
	assertTerminate(t, got, wire.TermRDMAPOpUnspecified, bad, 18, false)
	<-a.qp.Done()
	if c := waitCQE(t, a.scq); c.ID != 4 || c.Status == StatusSuccess {
		t.Fatalf("atomic completed %+v", c)
	}
}

// TestRFC7306ReceivedLiberally: a QP that did not negotiate RFC 7306 still
// processes its messages (hardware sends Immediate Data without any
// negotiation, extensions.md §3.4): Immediate Data completes a receive and
// an Atomic Request is answered.
func TestRFC7306ReceivedLiberally(t *testing.T) {
	o := pairOpts{crc: true, ird: 2} // ext: false
	var target *mem.Region
	var words []uint64
	a, peer := rawSide(t, o, func(a *side) {
		target, words = atomicTarget(t, a, 1)
		r, _, _ := a.register(t, 8, mem.AccessLocalWrite)
		if _, err := a.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: r, Len: 8}}}}); err != nil {
			t.Fatal(err)
		}
	})
	peer.send(t, cat(untagged(8, true, 0, 0, 1, 0), []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	if c := waitCQE(t, a.rcq); c.Flags&HasImm == 0 || c.Imm != 0x0102030405060708 {
		t.Fatalf("Immediate Data not received liberally: %+v", c)
	}
	atomic.StoreUint64(&words[0], 41)
	req := untagged(0xA, true, 0, 1, 1, 0)
	req = binary.BigEndian.AppendUint32(req, 0)  // FetchAdd
	req = binary.BigEndian.AppendUint32(req, 77) // request identifier
	req = binary.BigEndian.AppendUint32(req, uint32(target.STag()))
	req = binary.BigEndian.AppendUint64(req, target.Base())
	req = binary.BigEndian.AppendUint64(req, 1)          // add
	req = binary.BigEndian.AppendUint64(req, 0)          // add mask
	req = binary.BigEndian.AppendUint64(req, 0)          // compare data
	req = binary.BigEndian.AppendUint64(req, ^uint64(0)) // compare mask
	peer.send(t, req)
	resp := peer.readULPDU(t)
	want := cat(untagged(0xB, true, 0, 3, 1, 0), binary.BigEndian.AppendUint32(nil, 77), binary.BigEndian.AppendUint64(nil, 41))
	if !bytes.Equal(resp, want) {
		t.Fatalf("Atomic Response % x, want % x", resp, want)
	}
	if v := atomic.LoadUint64(&words[0]); v != 42 {
		t.Fatalf("target %d", v)
	}
	if a.qp.State() != StateRTS {
		t.Fatalf("state %v: %v", a.qp.State(), a.qp.Err())
	}
}

// TestReadResponseWhileAtomicOutstanding: a (zero-length) Read Response
// cannot complete an outstanding atomic: RDMAP/2/0x06, and the atomic
// fails instead of completing with a made-up value.
func TestReadResponseWhileAtomicOutstanding(t *testing.T) {
	o := pairOpts{crc: true, ord: 1, ext: true}
	a, peer := rawSide(t, o, nil)
	if _, err := a.qp.PostSend([]SendWR{{ID: 4, Op: OpFetchAdd, Flags: Signaled, RemoteSTag: 5, RemoteTO: 0x1000, Data: 1}}); err != nil {
		t.Fatal(err)
	}
	peer.readULPDU(t) // the Atomic Request
	bad := tagged(2, true, 0, 0)
	peer.send(t, bad)
	got, _ := peer.readUntilTerminate(t)
	assertTerminate(t, got, wire.TermRDMAPUnexpectedOpcode, bad, 14, false)
	<-a.qp.Done()
	if c := waitCQE(t, a.scq); c.ID != 4 || c.Status == StatusSuccess {
		t.Fatalf("atomic completed %+v", c)
	}
}
