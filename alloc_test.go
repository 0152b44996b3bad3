package iwarp_test

import (
	"context"
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestPublicSteadyStateAllocs: the public posting path and the blocking
// calls allocate nothing per operation in steady state, over real sockets.
func TestPublicSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	a, b := connectPair(t, nil, nil)
	ctx := context.Background()
	const n = 4096
	src, _ := a.pd.RegisterMemory(make([]byte, n), 0)
	sink, _ := a.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
	dst, _ := b.pd.RegisterMemory(make([]byte, n), iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead)
	rbuf, _ := b.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
	remote := dst.Remote()
	sgl := []iwarp.SGE{src.SGE(0, n)}
	rsgl := []iwarp.SGE{rbuf.SGE(0, n)}
	var out [1]iwarp.Completion
	ops := map[string]func(){
		"blocking-write": func() {
			if err := a.qp.Write(ctx, remote, sgl...); err != nil {
				panic(err)
			}
		},
		"blocking-read": func() {
			if err := a.qp.Read(ctx, sink.SGE(0, n), remote); err != nil {
				panic(err)
			}
		},
		"posted-send": func() {
			if err := b.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: rsgl}); err != nil {
				panic(err)
			}
			if err := a.qp.PostSend(iwarp.SendWR{ID: 2, Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: sgl}); err != nil {
				panic(err)
			}
			for a.cq.Poll(out[:]) == 0 {
				_ = a.cq.Wait(ctx)
			}
			for b.cq.Poll(out[:]) == 0 {
				_ = b.cq.Wait(ctx)
			}
		},
	}
	for name, op := range ops {
		for i := 0; i < 50; i++ {
			op()
		}
		if allocs := testing.AllocsPerRun(200, op); allocs > 0 {
			t.Errorf("%s: %v allocations per operation", name, allocs)
		}
	}
}
