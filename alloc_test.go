package iwarp_test

import (
	"context"
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestPublicSteadyStateAllocs: every data path — the blocking calls and
// the posting path, one-sided, two-sided and atomic, including both ends'
// receive goroutines (AllocsPerRun counts the whole process) — allocates
// nothing per operation in steady state, over real sockets.
func TestPublicSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	a, b := connectPair(t, nil, nil)
	ctx := context.Background()
	// A context that can end: a waiter that reads the socket itself
	// registers it once (rxrole.go), not once per operation.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const n = 4096
	src, _ := a.pd.RegisterMemory(make([]byte, n), 0)
	sink, _ := a.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
	dst, _ := b.pd.RegisterMemory(make([]byte, n), iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead)
	rbuf, _ := b.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
	word, _ := b.pd.RegisterMemory(alignedBuf(8), iwarp.AccessRemoteAtomic)
	remote, wremote := dst.Remote(), word.Remote()
	sgl := []iwarp.SGE{src.SGE(0, n)}
	rsgl := []iwarp.SGE{rbuf.SGE(0, n)}
	var out [16]iwarp.Completion
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	// waitOne polls one completion from cq, waiting if there is none.
	waitOne := func(cq *iwarp.CQ) {
		for cq.Poll(out[:1]) == 0 {
			must(cq.Wait(ctx))
		}
		if out[0].Status != iwarp.StatusSuccess {
			panic(out[0].Err)
		}
	}
	// received posts a receive at b before f and polls its completion after.
	received := func(f func()) func() {
		return func() {
			must(b.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: rsgl}))
			f()
			waitOne(b.cq)
		}
	}
	batch := make([]iwarp.SendWR, 8)
	for i := range batch {
		batch[i] = iwarp.SendWR{ID: uint64(i), Op: iwarp.OpWrite, Remote: remote, SGL: sgl}
	}
	batch[len(batch)-1].Flags = iwarp.Signaled
	ops := map[string]func(){
		"blocking-write": func() { must(a.qp.Write(ctx, remote, sgl...)) },
		"blocking-read":  func() { must(a.qp.Read(ctx, remote, sink.SGE(0, n))) },
		"blocking-readv2": func() {
			must(a.qp.ReadV2(ctx, remote, sink.SGE(0, n/2), sink.SGE(n/2, n/2)))
		},
		"blocking-fetchadd": func() {
			_, err := a.qp.FetchAdd(ctx, wremote, 1)
			must(err)
		},
		"blocking-cmpswap": func() {
			_, err := a.qp.CompareSwap(ctx, wremote, 1, 2)
			must(err)
		},
		"blocking-fetchadd-cancelable-ctx": func() {
			_, err := a.qp.FetchAdd(cctx, wremote, 1)
			must(err)
		},
		"blocking-read-cancelable-ctx": func() { must(a.qp.Read(cctx, remote, sink.SGE(0, n))) },
		"blocking-send":                received(func() { must(a.qp.Send(ctx, sgl...)) }),
		"blocking-send-imm":            received(func() { must(a.qp.SendWithImmediate(ctx, 5, sgl...)) }),
		"blocking-write-imm":           received(func() { must(a.qp.WriteWithImmediate(ctx, remote, 6, sgl...)) }),
		"blocking-immediate":           received(func() { must(a.qp.ImmediateData(ctx, 7, 0)) }),
		"posted-send": received(func() {
			must(a.qp.PostSend(iwarp.SendWR{ID: 2, Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: sgl}))
			waitOne(a.cq)
		}),
		"posted-write-batch": func() {
			must(a.qp.PostSend(batch...))
			waitOne(a.cq)
		},
		"posted-read": func() {
			must(a.qp.PostSend(iwarp.SendWR{ID: 3, Op: iwarp.OpRead, Flags: iwarp.Signaled, Remote: remote, SGL: []iwarp.SGE{sink.SGE(0, n)}}))
			waitOne(a.cq)
		},
		"posted-fetchadd": func() {
			must(a.qp.PostSend(iwarp.SendWR{ID: 4, Op: iwarp.OpFetchAdd, Flags: iwarp.Signaled, Remote: wremote, Add: 1}))
			waitOne(a.cq)
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
