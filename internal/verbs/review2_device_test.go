package verbs

import (
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/rdma"
)

// TestReview2DeviceCloseLeavesIdleQPDeaf: Device.Close with a QP still
// connected and idle (its socket armed in the poller's epoll set). Its
// documentation said such a QP "fails when it next re-arms its socket",
// but an idle QP never re-arms: the poller was gone, so the peer's Send
// was never read, its receive never completed and the QP stayed in RTS for
// ever (no Done, no error) while its peer believed it connected.
//
// The fix fails the QPs the poller served at Device.Close: B ends at once
// with ErrDeviceClosed, its posted receive flushed, and its connection
// closed, so A sees its peer go (nothing is posted on A after
// Device.Close: whether such a post is refused or flushed would depend on
// how soon A reads the end of the stream).
func TestReview2DeviceCloseLeavesIdleQPDeaf(t *testing.T) {
	a, b := defaultPair(t)
	if !b.dev.Polling() {
		t.Skip("no poller on this system")
	}
	postRecv64(t, b, 7)
	if err := b.dev.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.qp.Done():
	case <-time.After(bound):
		t.Fatalf("%v after Device.Close: B is in state %v, not torn down", bound, b.qp.State())
	}
	if err := b.qp.Err(); !errors.Is(err, ErrDeviceClosed) {
		t.Errorf("B's error %v, want %v", err, ErrDeviceClosed)
	}
	if c := b.next(t); c.ID != 7 || c.Status != rdma.StatusFlushed {
		t.Errorf("B's receive: %+v, want receive 7 flushed", c.Completion)
	}
	select {
	case <-a.qp.Done():
	case <-time.After(bound):
		t.Fatalf("%v after B's Device.Close: A is in state %v, it never saw its peer go", bound, a.qp.State())
	}
}
