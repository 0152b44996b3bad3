package host

import (
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// TestReviewCloseWhileSlotHeld: a caller that took a slot just before
// Close ran (ReadAt or WriteAt between taking the slot and growing its
// buffer) must not leave a registered buffer behind: Close's teardown
// frees the buffers of the free slots, and the holder's buffer is freed
// when it gives the slot back. Before the fix teardown read every slot's
// buffer while holders could still replace it (a data race), and a buffer
// registered after teardown stayed registered for good.
func TestReviewCloseWhileSlotHeld(t *testing.T) {
	ft := newFakeTarget(t, 4096)
	c := connectFake(t, ft, &Config{IOQueues: 1, QueueSize: 4})
	ctx := testCtx(t)
	q := c.io[0]
	s, err := q.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cmd := nvme.RW{SLBA: 0, NLB: 15}.Command(nvme.NVMWrite, 0, 1, nvme.SGL{})
	if err := q.launch(ctx, s, &cmd, make([]byte, 8192), 8192); !errors.Is(err, ErrClosed) {
		t.Fatalf("a command launched after Close: %v", err)
	}
	if mr := s.data; mr != nil && mr.Valid() {
		t.Fatal("the buffer of a slot given back after Close is still registered")
	}
}
