//go:build linux && !iwarp_portable

package verbs

import (
	"context"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview5MissedReadyArmsAgain: the one path where a waiter leaves the
// socket armed by someone else and must arm it all the same. A waiter on
// the CQ takes the receive token while the socket is armed and is held
// (the test holds QP.rdMu, which it takes right after the token) before
// its first read; the peer's Send arrives, the poller's Ready finds the
// token taken, sets rxMissed and returns: the one-shot arm is spent. The
// waiter then reads the Send, finds its completion without parking (it
// never disarms: rxRelease(false)), and must arm again because of
// rxMissed. A second Send, with nobody waiting, must be read by the
// poller. Without the rxMissed swap in rxRelease it stays in the socket.
func TestReview5MissedReadyArmsAgain(t *testing.T) {
	a, b := defaultPair(t)
	q := a.qp
	a.postRecv(t, rdmap.RecvWR{ID: 1}, rdmap.RecvWR{ID: 2})

	q.rdMu.Lock()
	held := true
	t.Cleanup(func() {
		if held {
			q.rdMu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- a.cq.Wait(ctx) }()
	eventually(t, "the waiter holding the token, before its first read", func() bool {
		return q.rxTok.Load() && review5Blocked("sync.Mutex.Lock", []string{"(*QP).waitReading(", "(*CQ).Wait("}, nil)
	})
	if q.rxMissed.Load() {
		t.Fatal("rxMissed set before any Ready found the token taken")
	}
	b.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend})
	eventually(t, "a Ready finding the token taken", func() bool { return q.rxMissed.Load() })
	if socketQueued(t, a) == 0 {
		t.Fatal("the Send is not in a's socket: someone else read it")
	}
	held = false
	q.rdMu.Unlock()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if q.rdDisarmed {
		t.Fatal("the waiter parked: the test meant it to find its completion at once")
	}
	a.want(t, 1, rdma.StatusSuccess)

	// Nobody waits: the poller must read the second Send.
	b.post(t, rdmap.SendWR{ID: 2, Op: rdma.OpSend})
	var out [1]CQE
	deadline := time.Now().Add(bound)
	for a.cq.Poll(out[:]) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the second Send was not read: %d octets in a's socket, token %v, rxMissed %v",
				socketQueued(t, a), q.rxTok.Load(), q.rxMissed.Load())
		}
		time.Sleep(0) // Poll has no notification: a poll loop
	}
	if out[0].ID != 2 || out[0].Status != rdma.StatusSuccess {
		t.Fatalf("completion %+v, want receive 2", out[0].Completion)
	}
}
