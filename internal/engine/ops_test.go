package engine

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// opSizes returns the message sizes every operation is tested at: 0, 1,
// 4095, one FPDU's payload room -1/exact/+1 (the MULPDU boundary), 1 MiB
// and 64 MiB (16 MiB with -short).
func opSizes(mulpdu, hdr int) []int {
	room := mulpdu - hdr
	big := 64 << 20
	if testing.Short() {
		big = 16 << 20
	}
	return []int{0, 1, 4095, room - 1, room, room + 1, 1 << 20, big}
}

// opVariants are the framing variants: CRC off and on with the MULPDU the
// loopback MSS gives, and CRC on with a 1.4 KiB MULPDU (an MTU-1500 path).
var opVariants = []pairOpts{
	{crc: false},
	{crc: true},
	{crc: true, mulpdu: 1454},
}

func variantName(o pairOpts) string {
	return fmt.Sprintf("crc=%v/mulpdu=%d", o.crc, o.mulpdu)
}

// startedPair returns a connected pair and the MULPDU it uses.
func startedPair(t *testing.T, o pairOpts, setup func(a, b *side)) (*side, *side, int) {
	a, b := newPair(t, o)
	if setup != nil {
		setup(a, b)
	}
	startPair(t, o, a, b)
	return a, b, a.qp.Params().MULPDU
}

// sgl describes n bytes of a registered buffer cut into SGEs of prime-ish
// lengths separated by 16-byte gaps of canary bytes.
type sgl struct {
	sges []SGE
	buf  []byte // the whole registered buffer, gaps included
	all  []byte // buf with the outer canaries
}

const gap = 16

func newSGL(t *testing.T, s *side, n, k int, acc mem.Access, seed int) *sgl {
	t.Helper()
	lens := splitLens(n, k)
	total := n + gap*max(len(lens)-1, 0)
	r, buf, all := s.registerFilled(t, max(total, 1), acc, -1)
	for i := range buf {
		buf[i] = 0xCA
	}
	g := &sgl{buf: buf, all: all}
	off := 0
	for _, l := range lens {
		g.sges = append(g.sges, SGE{Region: r, Off: uint64(off), Len: uint32(l)})
		for i := 0; i < l; i++ {
			buf[off+i] = 0
		}
		off += l + gap
	}
	if seed >= 0 {
		g.fill(byte(seed))
	}
	return g
}

// fill writes bytes that encode their message offset into the SGEs.
func (g *sgl) fill(seed byte) {
	mo := 0
	for _, s := range g.sges {
		b := g.buf[s.Off : s.Off+uint64(s.Len)]
		for i := range b {
			p := mo + i
			b[i] = byte(p) ^ byte(p>>8) ^ byte(p>>16) ^ seed
		}
		mo += int(s.Len)
	}
}

// message returns the SGEs' bytes concatenated.
func (g *sgl) message() []byte {
	var out []byte
	for _, s := range g.sges {
		out = append(out, g.buf[s.Off:s.Off+uint64(s.Len)]...)
	}
	return out
}

// checkGaps verifies every canary byte between and around the SGEs.
func (g *sgl) checkGaps(t *testing.T) {
	t.Helper()
	checkCanaries(t, g.all, len(g.buf))
	off := 0
	for i, s := range g.sges {
		if i > 0 {
			for j := off; j < int(s.Off); j++ {
				if g.buf[j] != 0xCA {
					t.Fatalf("canary between SGEs %d and %d overwritten at %d", i-1, i, j)
				}
			}
		}
		off = int(s.Off) + int(s.Len)
	}
}

// splitLens cuts n into up to k lengths of unequal, prime-ish sizes.
func splitLens(n, k int) []int {
	if n == 0 {
		return []int{0}
	}
	primes := []int{7, 13, 31, 61, 127, 251}
	var lens []int
	rest := n
	for i := 0; i < k-1 && rest > 1; i++ {
		l := min(primes[i%len(primes)]*(1+n/1000), rest-1)
		lens = append(lens, l)
		rest -= l
	}
	return append(lens, rest)
}

func TestSendRecv(t *testing.T) {
	for _, o := range opVariants {
		t.Run(variantName(o), func(t *testing.T) {
			_, _, mulpdu := startedPair(t, o, nil)
			for _, n := range opSizes(mulpdu, wire.UntaggedHdrLen) {
				t.Run(fmt.Sprintf("size=%d", n), func(t *testing.T) {
					var dst *sgl
					a, b, _ := startedPair(t, o, func(a, b *side) {
						dst = newSGL(t, b, n, 3, mem.AccessLocalWrite, -1)
						if _, err := b.qp.PostRecv([]RecvWR{{ID: 42, SGL: dst.sges}}); err != nil {
							t.Fatal(err)
						}
					})
					src := newSGL(t, a, n, 5, 0, 1)
					if _, err := a.qp.PostSend([]SendWR{{ID: 7, Op: OpSend, Flags: Signaled, SGL: src.sges}}); err != nil {
						t.Fatal(err)
					}
					if c := waitCQE(t, a.scq); c.Status != StatusSuccess || c.ID != 7 || c.Op != OpSend {
						t.Fatalf("send completion %+v", c)
					}
					if c := waitCQE(t, b.rcq); c.Status != StatusSuccess || c.ID != 42 || c.Len != uint32(n) {
						t.Fatalf("recv completion %+v", c)
					}
					if !bytes.Equal(dst.message(), src.message()) {
						t.Fatal("received bytes differ")
					}
					dst.checkGaps(t)
					src.checkGaps(t)
				})
			}
		})
	}
}

func TestWrite(t *testing.T) {
	for _, o := range opVariants {
		t.Run(variantName(o), func(t *testing.T) {
			_, _, mulpdu := startedPair(t, o, nil)
			for _, n := range opSizes(mulpdu, wire.TaggedHdrLen) {
				t.Run(fmt.Sprintf("size=%d", n), func(t *testing.T) {
					a, b, _ := startedPair(t, o, nil)
					dr, dbuf, dall := b.register(t, max(n, 1), mem.AccessRemoteWrite)
					src := newSGL(t, a, n, 4, 0, 2)
					// A Write followed by a Send: the Send's arrival proves
					// the Write was placed (RFC 5040 §5.5 ordering).
					fr, _, _ := b.register(t, 1, mem.AccessLocalWrite)
					if _, err := b.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: fr, Len: 0}}}}); err != nil {
						t.Fatal(err)
					}
					wrs := []SendWR{
						{ID: 1, Op: OpWrite, Flags: Signaled, SGL: src.sges, RemoteSTag: uint32(dr.STag()), RemoteTO: dr.Base()},
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
					if !bytes.Equal(dbuf[:n], src.message()) {
						t.Fatal("written bytes differ")
					}
					checkCanaries(t, dall, len(dbuf))
					src.checkGaps(t)
				})
			}
		})
	}
}

func TestRead(t *testing.T) {
	for _, o := range opVariants {
		o.ord, o.ird = 4, 4
		t.Run(variantName(o), func(t *testing.T) {
			_, _, mulpdu := startedPair(t, o, nil)
			for _, n := range opSizes(mulpdu, wire.TaggedHdrLen) {
				t.Run(fmt.Sprintf("size=%d", n), func(t *testing.T) {
					var src *mem.Region
					var sbuf []byte
					a, _, _ := startedPair(t, o, func(a, b *side) {
						src, sbuf, _ = b.registerFilled(t, max(n, 1), mem.AccessRemoteRead, 3)
					})
					sink, dbuf, dall := a.register(t, max(n, 1), mem.AccessLocalWrite)
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
					checkCanaries(t, dall, len(dbuf))
				})
			}
		})
	}
}

// TestORDQueuing: more Reads than ORD are queued locally and all complete,
// in posting order.
func TestORDQueuing(t *testing.T) {
	o := pairOpts{crc: true, ord: 2, ird: 2, depth: 32}
	var src *mem.Region
	a, _, _ := startedPair(t, o, func(a, b *side) {
		src, _, _ = b.registerFilled(t, 4096, mem.AccessRemoteRead, 5)
	})
	sink, _, _ := a.register(t, 4096, mem.AccessLocalWrite)
	var wrs []SendWR
	for i := 0; i < 12; i++ {
		wrs = append(wrs, SendWR{ID: uint64(i), Op: OpRead, Flags: Signaled, SGL: []SGE{{Region: sink, Off: uint64(i * 300), Len: 300}},
			RemoteSTag: uint32(src.STag()), RemoteTO: src.Base() + uint64(i*10)})
	}
	if _, err := a.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	for i := range wrs {
		if c := waitCQE(t, a.scq); c.ID != uint64(i) || c.Status != StatusSuccess {
			t.Fatalf("completion %d: %+v", i, c)
		}
	}
}
