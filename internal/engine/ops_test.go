package engine

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
)

var opSizes = []int{0, 1, 4095, 65535 - 18, 65535 - 17, 1 << 20}

func TestSendRecv(t *testing.T) {
	for _, crc := range []bool{false, true} {
		for _, n := range opSizes {
			t.Run(fmt.Sprintf("crc=%v/size=%d", crc, n), func(t *testing.T) {
				o := pairOpts{crc: crc}
				a, b := newPair(t, o)
				rr, rbuf, rall := b.register(t, n, mem.AccessLocalWrite)
				// Prime-length SGEs on the receive side.
				sgl := splitSGL(rr, n, 3)
				if _, err := b.qp.PostRecv([]RecvWR{{ID: 42, SGL: sgl}}); err != nil {
					t.Fatal(err)
				}
				startPair(t, o, a, b)
				sr, sbuf, sall := a.register(t, n, mem.AccessLocalWrite)
				pattern(sbuf[:n], 1)
				if _, err := a.qp.PostSend([]SendWR{{ID: 7, Op: OpSend, Flags: Signaled, SGL: splitSGL(sr, n, 5)}}); err != nil {
					t.Fatal(err)
				}
				sc := waitCQE(t, a.scq)
				if sc.Status != StatusSuccess || sc.ID != 7 || sc.Op != OpSend {
					t.Fatalf("send completion %+v", sc)
				}
				rc := waitCQE(t, b.rcq)
				if rc.Status != StatusSuccess || rc.ID != 42 || rc.Len != uint32(n) {
					t.Fatalf("recv completion %+v", rc)
				}
				if !bytes.Equal(rbuf[:n], sbuf[:n]) {
					t.Fatal("received bytes differ")
				}
				checkCanaries(t, rall, n)
				checkCanaries(t, sall, n)
			})
		}
	}
}

func TestWrite(t *testing.T) {
	for _, n := range opSizes {
		t.Run(fmt.Sprintf("size=%d", n), func(t *testing.T) {
			o := pairOpts{crc: true}
			a, b := newPair(t, o)
			startPair(t, o, a, b)
			dr, dbuf, dall := b.register(t, n, mem.AccessRemoteWrite)
			sr, sbuf, _ := a.register(t, n, 0)
			pattern(sbuf[:n], 2)
			// A Write followed by a Send: the Send's arrival proves the
			// Write was placed (RFC 5040 §5.5 ordering).
			fr, _, _ := b.register(t, 1, mem.AccessLocalWrite)
			if _, err := b.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: fr, Len: 0}}}}); err != nil {
				t.Fatal(err)
			}
			wrs := []SendWR{
				{ID: 1, Op: OpWrite, Flags: Signaled, SGL: splitSGL(sr, n, 4), RemoteSTag: uint32(dr.STag()), RemoteTO: dr.Base()},
				{ID: 2, Op: OpSend, Flags: Signaled},
			}
			if _, err := a.qp.PostSend(wrs); err != nil {
				t.Fatal(err)
			}
			for _, want := range []uint64{1, 2} {
				if c := waitCQE(t, a.scq); c.Status != StatusSuccess || c.ID != want {
					t.Fatalf("completion %+v, want id %d", c, want)
				}
			}
			if c := waitCQE(t, b.rcq); c.Status != StatusSuccess {
				t.Fatalf("recv %+v", c)
			}
			if !bytes.Equal(dbuf[:n], sbuf[:n]) {
				t.Fatal("written bytes differ")
			}
			checkCanaries(t, dall, n)
		})
	}
}

func TestRead(t *testing.T) {
	for _, n := range opSizes {
		t.Run(fmt.Sprintf("size=%d", n), func(t *testing.T) {
			o := pairOpts{crc: true, ord: 4, ird: 4}
			a, b := newPair(t, o)
			startPair(t, o, a, b)
			src, sbuf, _ := b.registerFilled(t, n, mem.AccessRemoteRead, 3)
			sink, dbuf, dall := a.register(t, n, mem.AccessLocalWrite)
			wr := SendWR{ID: 9, Op: OpRead, Flags: Signaled, SGL: []SGE{{Region: sink, Len: uint32(n)}},
				RemoteSTag: uint32(src.STag()), RemoteTO: src.Base()}
			if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			if c := waitCQE(t, a.scq); c.Status != StatusSuccess || c.ID != 9 || c.Op != OpRead {
				t.Fatalf("read completion %+v (%v)", c, c.Err)
			}
			if !bytes.Equal(dbuf[:n], sbuf[:n]) {
				t.Fatal("read bytes differ")
			}
			checkCanaries(t, dall, n)
		})
	}
}

// splitSGL cuts n bytes of r into k SGEs of unequal (prime-ish) lengths.
func splitSGL(r *mem.Region, n, k int) []SGE {
	if n == 0 {
		return []SGE{{Region: r, Len: 0}}
	}
	primes := []int{7, 13, 31, 61, 127, 251}
	var sgl []SGE
	off := 0
	for i := 0; i < k-1 && off < n; i++ {
		l := min(primes[i%len(primes)]*(1+n/1000), n-off)
		sgl = append(sgl, SGE{Region: r, Off: uint64(off), Len: uint32(l)})
		off += l
	}
	if off < n {
		sgl = append(sgl, SGE{Region: r, Off: uint64(off), Len: uint32(n - off)})
	}
	return sgl
}
