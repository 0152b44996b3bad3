package iwarp_test

import (
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestStats reads the counters after a scripted session, including a
// Terminate: both QPs and both Devices agree on what was sent and received.
func TestStats(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	target, _ := b.pd.RegisterMemory(make([]byte, 4096), iwarp.AccessRemoteWrite)
	src, _ := a.pd.RegisterMemory(make([]byte, 4096), 0)
	if err := a.qp.Write(ctx, target.Remote(), src.SGE(0, 4096)); err != nil {
		t.Fatal(err)
	}
	// A Send with no receive posted: Terminate DDP/2/0x02 from b.
	if err := a.qp.Send(ctx); err != nil {
		t.Fatal(err)
	}
	<-a.qp.Done()
	<-b.qp.Done()
	sa, sb := a.qp.Stats(), b.qp.Stats()
	if sa.FPDUsSent == 0 || sa.FPDUsSent != sb.FPDUsReceived || sa.BytesSent != sb.BytesReceived {
		t.Fatalf("a sent %d FPDUs/%d bytes, b received %d/%d", sa.FPDUsSent, sa.BytesSent, sb.FPDUsReceived, sb.BytesReceived)
	}
	if sb.RecvQueueEmpty != 1 {
		t.Fatalf("b receive-queue-empty %d", sb.RecvQueueEmpty)
	}
	want := iwarp.TerminateCount{Code: iwarp.TermDDPNoBuffer, Sent: 1}
	if len(sb.Terminates) != 1 || sb.Terminates[0] != want {
		t.Fatalf("b terminates %+v", sb.Terminates)
	}
	if len(sa.Terminates) != 1 || sa.Terminates[0].Received != 1 || sa.Terminates[0].Code != iwarp.TermDDPNoBuffer {
		t.Fatalf("a terminates %+v", sa.Terminates)
	}
	if d := b.dev.Stats(); d.FPDUsReceived != sb.FPDUsReceived || d.RecvQueueEmpty != 1 {
		t.Fatalf("device stats %+v", d)
	}
}

// TestStatsBlockingCalls: the FPDUs of blocking calls (FetchAdds: one
// request and one response each) are counted by the QP and the Device like
// any other, and the responses the waiting goroutine read itself are
// counted in FPDUsByWaiters (where waiters read: waitersRead).
func TestStatsBlockingCalls(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	word, _ := b.pd.RegisterMemory(alignedBuf(8), iwarp.AccessRemoteAtomic)
	const n = 100
	for i := range n {
		old, err := a.qp.FetchAdd(ctx, word.Remote(), 1)
		if err != nil || old != uint64(i) {
			t.Fatalf("FetchAdd %d: %d, %v", i, old, err)
		}
	}
	s := a.qp.Stats()
	if s.FPDUsSent < n || s.FPDUsReceived < n || waitersRead != (s.FPDUsByWaiters > 0) || s.FPDUsByWaiters > s.FPDUsReceived {
		t.Fatalf("after %d FetchAdds: %d FPDUs sent, %d received, %d by waiters", n, s.FPDUsSent, s.FPDUsReceived, s.FPDUsByWaiters)
	}
	if d := a.dev.Stats(); d.FPDUsReceived < s.FPDUsReceived || d.FPDUsSent < s.FPDUsSent || d.FPDUsByWaiters < s.FPDUsByWaiters {
		t.Fatalf("device counts %d FPDUs sent, %d received (%d by waiters), the QP %d, %d", d.FPDUsSent, d.FPDUsReceived, d.FPDUsByWaiters, s.FPDUsSent, s.FPDUsReceived)
	}
}
