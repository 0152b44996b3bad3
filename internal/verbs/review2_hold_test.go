package verbs

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview2HoldDisconnectNoTimeout: an MPA Responder (HoldSendUntilReceive)
// whose Initiator never sends its first FPDU. The Responder posts a Send
// and disconnects with an operation timeout set: the Send is held, the
// Core reports no Waiting (nothing buffered, no Read outstanding, no
// half-close due), so the timer is never armed and Disconnect waits for
// its context alone, although Disconnect's documentation promises
// ErrPeerStalled when the peer does not close within the operation timeout
// (with nothing posted it does: the half-close is due at once). Waiting
// should count work held for the peer's first FPDU.
func TestReview2HoldDisconnectNoTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := timedOpts()
		o.framing.HoldSendUntilReceive = true
		e, p := scriptedPipe(t, o)
		go p.drainAll()
		e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(e.register(t, []byte("held"), 0))}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		err := e.qp.Disconnect(ctx)
		if qerr := e.qp.Err(); !errors.Is(qerr, ErrPeerStalled) {
			t.Errorf("Disconnect returned %v, QP error %v: want the operation timeout (%v) to end it, not the context of an hour",
				err, qerr, opTimeout)
		}
	})
}

// TestReview2HoldPostWaitNoTimeout: the same held MPA Responder, with the
// work posted through Do (PostWait) and no Disconnect: the Initiator never
// sends its first FPDU, and the operation timeout never fails the QP, so
// the Do waits for its context alone (an hour here) and the WR stays
// outstanding. PostWait must arm the timer as PostSend does for held work.
func TestReview2HoldPostWaitNoTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := timedOpts()
		o.framing.HoldSendUntilReceive = true
		e, p := scriptedPipe(t, o)
		go p.drainAll()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		c, err := e.qp.Do(ctx, rdmap.SendWR{ID: 1, Op: rdma.OpSend, SGL: []rdma.SGE{whole(e.register(t, []byte("held"), 0))}})
		qerr := e.qp.Err()
		e.qp.Close()
		if !errors.Is(qerr, ErrPeerStalled) || err != nil || c.Status != rdma.StatusFlushed {
			t.Errorf("Do returned %+v, %v; QP error %v: want the Send flushed by the operation timeout (%v), not the context of an hour",
				c, err, qerr, opTimeout)
		}
	})
}
