//go:build linux && !iwarp_portable

package verbs

import (
	"context"
	"testing"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/testnet"
)

// TestReview5FailsWaitBeforeStartRace (fails under -race only): a CQ.Wait
// that begins before its QP starts reads q.rc in waitReading
// (`q.rc == nil || h == nil`, q.rc first) with nothing ordering that read
// before Start's write of q.rc under q.mu: the race detector reports it.
// A QP's CQ waited on by one goroutine while another connects and starts
// the QP is an ordinary pattern.
//
// Fix: look at the atomic h first (`h == nil || q.rc == nil`): a non-nil
// Handle was stored after q.rc was written, so the read is ordered.
func TestReview5FailsWaitBeforeStartRace(t *testing.T) {
	a, b := newEnd(t, defaultOpts()), newEnd(t, defaultOpts())
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- a.cq.Wait(ctx) }()
	eventually(t, "the CQ's waiter waiting before Start", func() bool {
		return review5Blocked("select", []string{"(*CQ).Wait("}, nil)
	})
	ca, cb := testnet.TCPPair(t)
	a.start(t, ca, defaultOpts())
	b.start(t, cb, defaultOpts())
	a.postRecv(t, rdmap.RecvWR{ID: 1})
	b.post(t, rdmap.SendWR{ID: 2, Op: rdmap.OpSend, Flags: rdmap.Signaled})
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	a.want(t, 1, rdmap.StatusSuccess)
}
