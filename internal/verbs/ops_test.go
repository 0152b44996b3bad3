package verbs

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// Every operation end to end between two shells, in each way a QP can
// read and write its connection.

// modes are the ways a QP reads and writes its connection: the Device's
// poller; a receive goroutine waiting in the runtime's network poller
// (no poller); a receive goroutine reading a connection without a
// descriptor into a bounce buffer, with blocking writes (the portable
// path).
var modes = []struct {
	name         string
	noPoll, pipe bool
}{{"poller", false, false}, {"goroutine", true, false}, {"portable", true, true}}

// modeOpts are the default options in mode m.
func modeOpts(noPoll, pipe bool) opts {
	o := defaultOpts()
	o.noPoll, o.pipe = noPoll, pipe
	return o
}

// v2Opts are modeOpts with the V2 extensions agreed.
func v2Opts(noPoll, pipe bool) opts {
	o := modeOpts(noPoll, pipe)
	o.params.V2 = true
	return o
}

// remote names region r for a work request.
func remote(wr rdmap.SendWR, r *mem.Region, off uint64) rdmap.SendWR {
	wr.Remote = rdma.RemoteBuffer{STag: uint32(r.STag()), TO: r.Base() + off}
	return wr
}

// TestOperations runs each operation once per mode and checks what both
// sides see.
func TestOperations(t *testing.T) {
	const access = mem.AccessRemoteWrite | mem.AccessRemoteRead | mem.AccessRemoteAtomic | mem.AccessRemoteInvalidate | mem.AccessLocalWrite
	type sides struct {
		a, b   *end
		rb     []byte      // b's receive buffer (64 octets, receive ID 100)
		target []byte      // b's remote buffer (4 KiB)
		tr     *mem.Region // its registration
		src    *mem.Region // a's 16-octet source "0123456789abcdef"
		sink   []byte      // a's sink (4 KiB)
		sk     *mem.Region
	}
	cases := []struct {
		name string
		run  func(t *testing.T, s *sides)
	}{
		{"Send", func(t *testing.T, s *sides) {
			s.a.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(s.src)}})
			s.a.want(t, 1, rdma.StatusSuccess)
			c := s.b.want(t, 100, rdma.StatusSuccess)
			if c.Len != 16 || string(s.rb[:16]) != "0123456789abcdef" || c.Solicited || c.Invalidated != 0 || c.HasImmediate {
				t.Fatalf("receive %+v, buffer %q", c.Completion, s.rb[:16])
			}
		}},
		{"SendSE", func(t *testing.T, s *sides) {
			s.a.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled | rdma.Solicited, SGL: []rdma.SGE{whole(s.src)}})
			s.a.want(t, 1, rdma.StatusSuccess)
			if c := s.b.want(t, 100, rdma.StatusSuccess); !c.Solicited {
				t.Fatalf("receive %+v: not solicited", c.Completion)
			}
		}},
		{"SendInv", func(t *testing.T, s *sides) {
			s.a.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled | rdma.Invalidate, SGL: []rdma.SGE{whole(s.src)}, InvalidateSTag: uint32(s.tr.STag())})
			s.a.want(t, 1, rdma.StatusSuccess)
			c := s.b.want(t, 100, rdma.StatusSuccess)
			if c.Invalidated != uint32(s.tr.STag()) || s.tr.Valid() {
				t.Fatalf("receive %+v: the target (valid %v) was not invalidated", c.Completion, s.tr.Valid())
			}
		}},
		{"Inline", func(t *testing.T, s *sides) {
			buf := []byte("inline payload")
			src := s.a.register(t, buf, 0)
			s.a.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled | rdma.Inline, SGL: []rdma.SGE{whole(src)}})
			clear(buf) // Inline copied the payload at post time: the source is free for reuse
			s.a.want(t, 1, rdma.StatusSuccess)
			if c := s.b.want(t, 100, rdma.StatusSuccess); string(s.rb[:c.Len]) != "inline payload" {
				t.Fatalf("received %q", s.rb[:c.Len])
			}
		}},
		{"SendScatter", func(t *testing.T, s *sides) {
			// Three source pieces into a second receive of two buffers.
			p1, p2 := make([]byte, 5), make([]byte, 100)
			r1, r2 := s.b.register(t, p1, mem.AccessLocalWrite), s.b.register(t, p2, mem.AccessLocalWrite)
			s.b.postRecv(t, rdmap.RecvWR{ID: 101, SGL: []rdma.SGE{whole(r1), whole(r2)}})
			x := s.a.register(t, []byte("abcdefghijklmnopqrstuvwxyz"), 0)
			s.a.post(t, rdmap.SendWR{ID: 0, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(s.src)}},
				rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{
					{STag: uint32(x.STag()), Offset: 0, Length: 3}, {STag: uint32(x.STag()), Offset: 10, Length: 4}, {STag: uint32(s.src.STag()), Offset: 8, Length: 8}}})
			s.a.want(t, 0, rdma.StatusSuccess)
			s.a.want(t, 1, rdma.StatusSuccess)
			s.b.want(t, 100, rdma.StatusSuccess)
			c := s.b.want(t, 101, rdma.StatusSuccess)
			if got := string(p1) + string(p2[:c.Len-5]); c.Len != 15 || got != "abcklmn89abcdef" {
				t.Fatalf("received %d octets %q", c.Len, got)
			}
		}},
		{"Immediate", func(t *testing.T, s *sides) {
			s.a.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpImmediate, Flags: rdma.Signaled, Immediate: 0x1122334455667788})
			s.a.want(t, 1, rdma.StatusSuccess)
			// The 8 octets land in a receive buffer that holds them too.
			c := s.b.want(t, 100, rdma.StatusSuccess)
			if !c.HasImmediate || c.Immediate != 0x1122334455667788 || c.Len != 8 || !bytes.Equal(s.rb[:8], []byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}) {
				t.Fatalf("receive %+v, buffer % x", c.Completion, s.rb[:8])
			}
		}},
		{"SendImm", func(t *testing.T, s *sides) {
			s.a.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled | rdma.WithImmediate, SGL: []rdma.SGE{whole(s.src)}, Immediate: 7})
			s.a.want(t, 1, rdma.StatusSuccess)
			if c := s.b.want(t, 100, rdma.StatusSuccess); !c.HasImmediate || c.Immediate != 7 || c.Len != 16 {
				t.Fatalf("receive %+v", c.Completion)
			}
		}},
		{"Write", func(t *testing.T, s *sides) {
			s.a.post(t, remote(rdmap.SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(s.src)}}, s.tr, 100))
			s.a.want(t, 1, rdma.StatusSuccess)
			// A Write completes at the sender when written: a Send after
			// it proves it placed (docs/semantics.md rule 2).
			s.a.post(t, rdmap.SendWR{ID: 2, Op: rdma.OpSend})
			s.b.want(t, 100, rdma.StatusSuccess)
			if string(s.target[100:116]) != "0123456789abcdef" {
				t.Fatalf("target %q", s.target[100:116])
			}
		}},
		{"WriteImm", func(t *testing.T, s *sides) {
			s.a.post(t, remote(rdmap.SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled | rdma.WithImmediate, SGL: []rdma.SGE{whole(s.src)}, Immediate: 9}, s.tr, 0))
			s.a.want(t, 1, rdma.StatusSuccess)
			c := s.b.want(t, 100, rdma.StatusSuccess)
			if !c.HasImmediate || c.Immediate != 9 || string(s.target[:16]) != "0123456789abcdef" {
				t.Fatalf("receive %+v, target %q", c.Completion, s.target[:16])
			}
		}},
		{"Read", func(t *testing.T, s *sides) {
			c, err := s.a.qp.Do(context.Background(), remote(rdmap.SendWR{ID: 1, Op: rdma.OpRead, SGL: []rdma.SGE{whole(s.sk)}}, s.tr, 0))
			if err != nil || c.Status != rdma.StatusSuccess || !bytes.Equal(s.sink, s.target) {
				t.Fatalf("Read: %+v, %v", c, err)
			}
		}},
		{"ReadInv", func(t *testing.T, s *sides) {
			s.a.post(t, remote(rdmap.SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled | rdma.Invalidate, SGL: []rdma.SGE{whole(s.sk)}}, s.tr, 0))
			s.a.want(t, 1, rdma.StatusSuccess)
			if s.sk.Valid() {
				t.Fatal("the Read's sink is still valid after a Read with Invalidate")
			}
		}},
		{"ReadV2", func(t *testing.T, s *sides) {
			s.a.post(t, remote(rdmap.SendWR{ID: 1, Op: rdma.OpReadV2, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: uint32(s.sk.STag()), Length: 16}}}, s.tr, 0))
			if c := s.a.want(t, 1, rdma.StatusSuccess); !bytes.Equal(s.sink[:16], s.target[:16]) {
				t.Fatalf("Read V2 %+v: sink %q", c.Completion, s.sink[:16])
			}
		}},
		{"FetchAdd", func(t *testing.T, s *sides) {
			s.tr.AtomicCmpSwap(s.tr.Base()+8, 0, 0, 41, ^uint64(0))
			res := s.a.register(t, make([]byte, 8), mem.AccessLocalWrite)
			c, err := s.a.qp.Do(context.Background(), remote(rdmap.SendWR{ID: 1, Op: rdma.OpFetchAdd, SGL: []rdma.SGE{whole(res)}, Add: 1}, s.tr, 8))
			if err != nil || c.Status != rdma.StatusSuccess || c.Original != 41 || res.AtomicLoad(res.Base()) != 41 {
				t.Fatalf("FetchAdd: %+v, %v", c, err)
			}
			if v := s.tr.AtomicLoad(s.tr.Base() + 8); v != 42 {
				t.Fatalf("FetchAdd left %d, want 42", v)
			}
		}},
		{"CmpSwap", func(t *testing.T, s *sides) {
			s.tr.AtomicCmpSwap(s.tr.Base()+16, 0, 0, 5, ^uint64(0))
			c, err := s.a.qp.Do(context.Background(), remote(rdmap.SendWR{ID: 1, Op: rdma.OpCompareSwap, Compare: 5, CompareMask: ^uint64(0), Swap: 6, SwapMask: ^uint64(0)}, s.tr, 16))
			if err != nil || c.Status != rdma.StatusSuccess || c.Original != 5 || s.tr.AtomicLoad(s.tr.Base()+16) != 6 {
				t.Fatalf("CmpSwap: %+v, %v", c, err)
			}
		}},
		{"LocalInv", func(t *testing.T, s *sides) {
			s.a.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpLocalInvalidate, Flags: rdma.Signaled, InvalidateSTag: uint32(s.sk.STag())})
			s.a.want(t, 1, rdma.StatusSuccess)
			if s.sk.Valid() {
				t.Fatal("the region is still valid after a Local Invalidate")
			}
		}},
	}
	for _, m := range modes {
		for _, tc := range cases {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				a, b := pair(t, v2Opts(m.noPoll, m.pipe), v2Opts(m.noPoll, m.pipe))
				s := &sides{a: a, b: b, rb: make([]byte, 64), target: make([]byte, 4096), sink: make([]byte, 4096)}
				// The target's content is set before the responder's
				// goroutines can read it (only the network orders what
				// this goroutine writes afterwards with them).
				for i := range s.target {
					s.target[i] = byte(i*13 + 1)
				}
				b.postRecv(t, rdmap.RecvWR{ID: 100, SGL: []rdma.SGE{whole(b.register(t, s.rb, mem.AccessLocalWrite))}})
				s.tr = b.register(t, s.target, access)
				s.src = a.register(t, []byte("0123456789abcdef"), 0)
				s.sk = a.register(t, s.sink, mem.AccessLocalWrite|mem.AccessRemoteInvalidate)
				tc.run(t, s)
				a.closeWithin(t)
				b.closeWithin(t)
			})
		}
	}
	noLeaks(t)
}

// TestBulk moves large messages both ways in each mode: a Write and a
// Read larger than the sockets hold (a transmit goroutine waits for room,
// and the receiver reads with a goroutine of its own past its budget),
// with CRC on and off.
func TestBulk(t *testing.T) {
	const size = 8 << 20
	for _, m := range modes {
		for _, crc := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/crc=%v", m.name, crc), func(t *testing.T) {
				o := modeOpts(m.noPoll, m.pipe)
				o.framing.CRC = crc
				a, b := pair(t, o, o)
				src := make([]byte, size)
				for i := range src {
					src[i] = byte(i * 7)
				}
				sr := a.register(t, src, 0)
				dst := make([]byte, size)
				dr := b.register(t, dst, mem.AccessRemoteWrite|mem.AccessRemoteRead)
				a.post(t, remote(rdmap.SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(sr)}}, dr, 0))
				sink := make([]byte, size)
				c, err := a.qp.Do(context.Background(), remote(rdmap.SendWR{ID: 2, Op: rdma.OpRead, SGL: []rdma.SGE{whole(a.register(t, sink, mem.AccessLocalWrite))}}, dr, 0))
				if err != nil || c.Status != rdma.StatusSuccess {
					t.Fatalf("Read: %+v, %v", c, err)
				}
				a.want(t, 1, rdma.StatusSuccess)
				if !bytes.Equal(sink, src) {
					t.Fatal("the Read after the Write did not return what was written")
				}
				a.closeWithin(t)
				b.closeWithin(t)
			})
		}
	}
}
