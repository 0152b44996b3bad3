//go:build linux && !iwarp_portable

package verbs

import (
	"context"
	"testing"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/testnet"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview5WaitBeforeStart (under -race): a CQ.Wait that begins before
// its QP starts, as when one goroutine waits on the CQ while another
// connects and starts the QP. Before 76e36f1 waitReading read q.rc before
// loading the Handle, with nothing ordering that read before Start's
// write of q.rc under q.mu: the race detector reported it. The wait must
// also end with the completion that comes once the QP runs.
func TestReview5WaitBeforeStart(t *testing.T) {
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
	b.post(t, rdmap.SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Signaled})
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	a.want(t, 1, rdma.StatusSuccess)
}
