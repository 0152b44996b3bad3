package iwarp_test

import (
	"context"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestSmallSendsLongAfterOpTimeoutStillSucceed: a QP that only sends small
// messages (which its posters write themselves, without the transmit
// goroutine) keeps working for longer than QPConfig.OpTimeout. Found by the
// long load run: the write deadline of an earlier blocking flush expired
// and every later non-blocking write failed with "i/o timeout", killing
// the connection OpTimeout after its last large transfer.
func TestSmallSendsLongAfterOpTimeoutStillSucceed(t *testing.T) {
	const opTimeout = 200 * time.Millisecond
	mk := func() *endpoint {
		e := newEndpoint(t)
		qp, err := e.pd.NewQP(&iwarp.QPConfig{SendCQ: e.cq, RecvCQ: e.cq, SendQueueDepth: 8, RecvQueueDepth: 8, OpTimeout: opTimeout})
		if err != nil {
			t.Fatal(err)
		}
		e.qp.Close()
		e.qp = qp
		return e
	}
	a, b := connect(t, mk(), mk(), nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	buf := make([]byte, 1<<20)
	src, _ := a.pd.RegisterMemory(buf, 0)
	dst, _ := b.pd.RegisterMemory(make([]byte, 1<<20), iwarp.AccessRemoteWrite|iwarp.AccessLocalWrite)
	// A large Write goes through the transmit goroutine's blocking flush,
	// which sets the write deadline.
	if err := a.qp.Write(ctx, dst.Remote(), src.SGE(0, len(buf))); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		time.Sleep(opTimeout) // (not a threshold: only makes the deadline pass)
		if err := b.qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{dst.SGE(0, 64)}}); err != nil {
			t.Fatal(err)
		}
		if err := a.qp.Send(ctx, src.SGE(0, 64)); err != nil {
			t.Fatalf("small Send %d, %v after the last blocking flush: %v", i, time.Duration(i+1)*opTimeout, err)
		}
		if c, err := b.cq.Next(ctx); err != nil || c.Status != iwarp.StatusSuccess {
			t.Fatalf("receive %d: %+v %v", i, c, err)
		}
	}
	if err := a.qp.Err(); err != nil {
		t.Fatalf("QP failed: %v", err)
	}
}
