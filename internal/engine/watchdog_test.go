package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
)

func newTimedSide(t *testing.T, timeout time.Duration) (*side, *rawPeer) {
	t.Helper()
	o := pairOpts{crc: false, ird: 2, ord: 2}
	ca, cb := tcpPair(t)
	a := newSide(t, o, ca)
	a.qp.cfg.OpTimeout = timeout
	a.start(t, o)
	t.Cleanup(func() { _ = a.qp.Close(); cb.Close() })
	return a, &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{})}
}

func waitDone(t *testing.T, qp *QP, within time.Duration) {
	t.Helper()
	select {
	case <-qp.Done():
	case <-time.After(within):
		t.Fatalf("QP still up after %v (state %v)", within, qp.State())
	}
}

// TestStallMidFPDU: a peer that stops sending inside an FPDU is detected
// within the operation timeout.
func TestStallMidFPDU(t *testing.T) {
	a, peer := newTimedSide(t, 200*time.Millisecond)
	// The first 10 bytes of a Write FPDU announcing 100 bytes, then nothing.
	if _, err := peer.nc.Write([]byte{0, 100, 0xc1, 0x40, 0, 0, 0, 1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitDone(t, a.qp, 5*time.Second)
	if !errors.Is(a.qp.Err(), ErrPeerStalled) {
		t.Fatalf("error %v", a.qp.Err())
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("gave up after %v, before the timeout", d)
	}
}

// TestUnansweredRead: a Read the peer never answers fails the QP, and the
// Read completes with an error status.
func TestUnansweredRead(t *testing.T) {
	a, _ := newTimedSide(t, 200*time.Millisecond)
	sink, _, _ := a.register(t, 64, mem.AccessLocalWrite)
	if _, err := a.qp.PostSend([]SendWR{{ID: 3, Op: OpRead, Flags: Signaled, SGL: []SGE{{Region: sink, Len: 64}}, RemoteSTag: 5}}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, a.qp, 5*time.Second)
	c := waitCQE(t, a.scq)
	if c.ID != 3 || c.Status != StatusFlushed || !errors.Is(c.Err, ErrPeerStalled) {
		t.Fatalf("completion %+v", c)
	}
}

// TestPeerStopsReading: a Write to a peer that reads nothing fails within
// the operation timeout instead of blocking forever.
func TestPeerStopsReading(t *testing.T) {
	a, _ := newTimedSide(t, 200*time.Millisecond)
	const n = 64 << 20
	src, _, _ := a.register(t, n, 0)
	if _, err := a.qp.PostSend([]SendWR{{ID: 4, Op: OpWrite, Flags: Signaled, SGL: []SGE{{Region: src, Len: n}}, RemoteSTag: 5}}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, a.qp, 10*time.Second)
	c := waitCQE(t, a.scq)
	if c.ID != 4 || c.Status == StatusSuccess {
		t.Fatalf("completion %+v", c)
	}
	var ce *ConnectionError
	if !errors.As(a.qp.Err(), &ce) {
		t.Fatalf("error %v", a.qp.Err())
	}
}

// TestIdleNotTimedOut: an idle QP with nothing outstanding stays up.
func TestIdleNotTimedOut(t *testing.T) {
	a, _ := newTimedSide(t, 50*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	if a.qp.State() != StateRTS {
		t.Fatalf("idle QP went to %v: %v", a.qp.State(), a.qp.Err())
	}
}
