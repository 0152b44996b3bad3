package iwarp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestRekeyWaitsForOldGeneration: Rekey returns only when nothing moves
// through the old registration any more (docs/semantics.md rule 6.3).
// The peer Reads a large region and reads nothing, so the Read Response
// is stuck in the socket holding the region's lease: Rekey must not
// return nil while it is, but end with its context, revoking the lease
// (the connection fails), and the new STag is valid.
func TestRekeyWaitsForOldGeneration(t *testing.T) {
	ep := newEndpoint(t)
	_, x := peerReadsBig(t, ep, iwarp.AccessRemoteRead)
	old := x.STag()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	fresh, err := x.Rekey(ctx, iwarp.AccessRemoteRead)
	if err == nil {
		t.Fatal("Rekey returned nil while a Read Response was sending from the old registration")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Rekey: %v, want an error matching context.DeadlineExceeded", err)
	}
	if fresh == 0 || fresh == old || !x.Valid() {
		t.Fatalf("after Rekey: STag %#x (old %#x), valid %v", fresh, old, x.Valid())
	}
	select {
	case <-ep.qp.Done(): // the revoked lease failed the connection
	case <-time.After(defectWait):
		t.Fatalf("QP not torn down after its lease was revoked (state %v)", ep.qp.State())
	}
}
