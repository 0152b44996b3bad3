package rdmap

import (
	"testing"

	"github.com/goiwarp/iwarp/rdma"
)

// BenchmarkRoundTrip measures the two cores' protocol work for one
// 8-byte Read or FetchAdd round trip, 16 in flight (the message-rate
// target of issue 17): posting, framing, deframing, validation, the
// response and the completion, with no I/O.
func BenchmarkRoundTrip(b *testing.B) {
	for _, op := range []rdma.Opcode{rdma.OpRead, rdma.OpFetchAdd} {
		b.Run(op.String(), func(b *testing.B) {
			o := defaults()
			o.ord, o.ird, o.sq = 16, 16, 32
			p := newOpPair(b, o)
			wrs := make([]SendWR, 16)
			for i := range wrs {
				wrs[i] = SendWR{ID: uint64(i), Op: op, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Offset: uint64(8 * i), Length: 8}}, Remote: rdma.RemoteBuffer{STag: stagOf(p.remote), TO: p.remote.Base() + uint64(8*i)}}
			}
			var sa, sb sink
			ab, ba := &feeder{}, &feeder{}
			comps := make([]Completion, 0, 32)
			move := func(from *Core, s *sink, to *Core, f *feeder) {
				for {
					s.iov = from.TxBufs(s.iov[:0])
					if len(s.iov) == 0 {
						return
					}
					n := 0
					for _, v := range s.iov {
						f.stream = append(f.stream, v...)
						n += len(v)
					}
					from.TxDone(n)
					f.feed(to, n)
					f.stream, f.off = f.stream[:0], 0
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += len(wrs) {
				if _, err := p.a.PostSend(wrs); err != nil {
					b.Fatal(err)
				}
				move(p.a, &sa, p.b, ab)
				move(p.b, &sb, p.a, ba)
				if comps = consume(p.a, comps); len(comps) != len(wrs) {
					b.Fatalf("%d completions", len(comps))
				}
			}
		})
	}
}
