package engine

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
)

// TestSteadyStateAllocs: posting and completing Write, Send and Read over a
// real loopback socket allocates nothing once warmed up.
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	for _, crc := range []bool{false, true} {
		o := pairOpts{crc: crc, ird: 4, ord: 4}
		a, b := newPair(t, o)
		startPair(t, o, a, b)
		const n = 4096
		src, _, _ := a.register(t, n, mem.AccessLocalWrite)
		dst, _, _ := b.register(t, n, mem.AccessRemoteWrite|mem.AccessRemoteRead|mem.AccessLocalWrite)
		rbuf, _, _ := b.register(t, n, mem.AccessLocalWrite)
		sgl := []SGE{{Region: src, Len: n}}
		rsgl := []SGE{{Region: rbuf, Len: n}}
		cases := []struct {
			name string
			wr   SendWR
		}{
			{"write", SendWR{ID: 1, Op: OpWrite, Flags: Signaled, SGL: sgl, RemoteSTag: uint32(dst.STag()), RemoteTO: dst.Base()}},
			{"send", SendWR{ID: 2, Op: OpSend, Flags: Signaled, SGL: sgl}},
			{"read", SendWR{ID: 3, Op: OpRead, Flags: Signaled, SGL: sgl, RemoteSTag: uint32(dst.STag()), RemoteTO: dst.Base()}},
		}
		wrs := make([]SendWR, 1)
		rwrs := []RecvWR{{ID: 9, SGL: rsgl}}
		var out [4]CQE
		for _, c := range cases {
			op := func() {
				if c.wr.Op == OpSend {
					if _, err := b.qp.PostRecv(rwrs); err != nil {
						panic(err)
					}
				}
				wrs[0] = c.wr
				if _, err := a.qp.PostSend(wrs); err != nil {
					panic(err)
				}
				for a.scq.Poll(out[:1]) == 0 {
					_ = a.scq.Wait(t.Context())
				}
				if out[0].Status != StatusSuccess {
					panic(out[0].Err)
				}
				if c.wr.Op == OpSend {
					for b.rcq.Poll(out[:1]) == 0 {
						_ = b.rcq.Wait(t.Context())
					}
				}
			}
			for i := 0; i < 50; i++ {
				op()
			}
			if allocs := testing.AllocsPerRun(200, op); allocs > 0 {
				t.Errorf("crc=%v %s: %v allocations per operation", crc, c.name, allocs)
			}
		}
	}
}
