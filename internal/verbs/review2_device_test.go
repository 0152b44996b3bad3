package verbs

import (
	"context"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/rdmap"
)

// TestReview2DeviceCloseLeavesIdleQPDeaf: Device.Close with a QP still
// connected and idle (its socket armed in the poller's epoll set). Its
// documentation says such a QP "fails when it next re-arms its socket",
// but an idle QP never re-arms: the poller is gone, so the peer's Send
// is never read, its receive never completes and the QP stays in RTS for
// ever (no Done, no error) while its peer believes it connected. Either
// the bytes must still be read, or the QP must fail at Device.Close.
func TestReview2DeviceCloseLeavesIdleQPDeaf(t *testing.T) {
	if !*reviewFindings {
		t.Skip("finding 3: Device.Close leaves an idle connected QP deaf in RTS for ever; run with -review.findings")
	}
	a, b := defaultPair(t)
	if !b.dev.Polling() {
		t.Skip("no poller on this system")
	}
	rb := postRecv64(t, b, 7)
	if err := b.dev.Close(); err != nil {
		t.Fatal(err)
	}
	// The Send is refused, or flushed, if B already failed and closed the
	// connection: also a right answer.
	if n, _ := a.qp.PostSend([]rdmap.SendWR{{ID: 1, Op: rdmap.OpSend, Flags: rdmap.Signaled, SGL: []rdmap.SGE{whole(a.register(t, []byte("hello"), 0))}}}); n == 1 {
		a.next(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- b.cq.Wait(ctx) }()
	select {
	case <-b.qp.Done(): // failed at once: acceptable
	case err := <-waited:
		if err != nil {
			t.Fatalf("2 s after Device.Close and the peer's Send: state %v, %d completions, buffer %q: the QP neither reads nor fails",
				b.qp.State(), b.cq.Len(), rb[:5])
		}
	}
}
