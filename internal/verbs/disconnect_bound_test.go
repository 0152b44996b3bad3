package verbs

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestDisconnectBoundedWithoutOpTimeout: with no operation timeout, an
// orderly Disconnect is bounded by the drain timeout whatever the peer
// does: a peer that reads everything but never closes its side, and one
// that reads nothing while a 1 MiB Write is outstanding. Disconnect
// returns nil at the drain timeout, not before, and the QP's error says
// why.
func TestDisconnectBoundedWithoutOpTimeout(t *testing.T) {
	for _, peerReads := range []bool{true, false} {
		name := map[bool]string{true: "peer-never-closes", false: "peer-reads-nothing"}[peerReads]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := defaultOpts()
				o.noPoll, o.drain = true, 3*time.Second // no operation timeout
				e, p := scriptedPipe(t, o)
				if peerReads {
					go p.drainAll()
				} else {
					postBigWrite(t, e)
				}
				start := time.Now()
				if err := e.qp.Disconnect(context.Background()); err != nil {
					t.Fatalf("Disconnect: %v", err)
				}
				if took := time.Since(start); took != o.drain {
					t.Errorf("Disconnect took %v, want the drain timeout %v", took, o.drain)
				}
				if err := e.qp.Err(); !errors.Is(err, ErrDisconnectTimeout) {
					t.Errorf("QP error %v, want %v", err, ErrDisconnectTimeout)
				}
				p.nc.Close()
			})
		})
	}
}
