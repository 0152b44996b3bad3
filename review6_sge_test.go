package iwarp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestReview6SGEOutOfRangeLengthRefused: MR.SGE takes an int length and
// stores it in SGE.Length (uint32): a length that does not fit (negative,
// or 2^32 and more) was truncated into a small valid one, so a post the
// documentation promises to refuse ("whether off and n lie in the region
// is checked when the SGE is posted") moved 16 bytes instead.
func TestReview6SGEOutOfRangeLengthRefused(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rbuf, _ := b.pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
	if err := b.qp.PostRecv(iwarp.RecvWR{SGL: []iwarp.SGE{rbuf.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	src, _ := a.pd.RegisterMemory(make([]byte, 64), 0)
	for _, n := range []int{1<<32 + 16, -(1 << 32) + 16} {
		err := a.qp.Send(ctx, src.SGE(0, n))
		if !errors.Is(err, iwarp.ErrInvalidWR) {
			t.Errorf("Send of SGE(0, %d) of a 64-byte region: %v, want ErrInvalidWR", n, err)
		}
	}
}
