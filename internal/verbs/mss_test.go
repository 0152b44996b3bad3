package verbs

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// TestMULPDUFollowsTheMSS: a QP whose MULPDU was derived from the MSS
// reads the MSS again as it writes and comes to the MULPDU of the
// connection's MSS (on Linux loopback the MSS grows from
// 32,741 to 65,483 once data flows); a QP given a MULPDU keeps it.
func TestMULPDUFollowsTheMSS(t *testing.T) {
	for _, noPoll := range []bool{false, true} {
		oa := defaultOpts()
		oa.noPoll = noPoll
		fixed := defaultOpts()
		fixed.params.MULPDU = 4000
		for _, o := range []opts{oa, fixed} {
			a, b := pair(t, o, defaultOpts())
			dst := b.register(t, make([]byte, 1<<20), mem.AccessLocalWrite|mem.AccessRemoteWrite)
			src := a.register(t, make([]byte, 1<<20), 0)
			// Up to 64 MiB, 1 MiB at a time, until the MULPDU is the one
			// of the MSS read after the last Write.
			want, got := 0, 0
			for i := range 64 {
				a.post(t, rdmap.SendWR{ID: uint64(i), Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(src)},
					Remote: rdma.RemoteBuffer{STag: uint32(dst.STag()), TO: dst.Base()}})
				a.want(t, uint64(i), rdma.StatusSuccess)
				want, got = fpdu.MULPDU(fpdu.EMSS(a.conn), false), a.qp.MULPDU()
				if o.params.MULPDU != 0 {
					want = o.params.MULPDU
				}
				if i >= 3 && got == want {
					break
				}
			}
			if got != want {
				t.Errorf("noPoll %v, MULPDU given %d: %d after 64 MiB, want %d", noPoll, o.params.MULPDU, got, want)
			}
		}
	}
}
