package iwarp_test

import (
	"context"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestEventChannelSolicited: a CQ armed for solicited completions is not
// woken by a plain Send but is by a Send with Solicited; one goroutine
// waits on the CQs of two connections through one event channel.
func TestEventChannelSolicited(t *testing.T) {
	ch := iwarp.NewEventChannel(4)
	mk := func() *endpoint {
		dev := iwarp.NewDevice(nil)
		pd, _ := dev.AllocPD()
		cq, _ := dev.NewCQ(64, ch)
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 8, RecvQueueDepth: 8})
		if err != nil {
			t.Fatal(err)
		}
		return &endpoint{dev: dev, pd: pd, cq: cq, qp: qp}
	}
	ctx := ctx10(t)
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Two servers with CQs bound to ch, two plain clients.
	var servers, clients []*endpoint
	for i := 0; i < 2; i++ {
		s := mk()
		rb, _ := s.pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
		for j := 0; j < 4; j++ {
			if err := s.qp.PostRecv(iwarp.RecvWR{ID: uint64(j), SGL: []iwarp.SGE{rb.SGE(0, 64)}}); err != nil {
				t.Fatal(err)
			}
		}
		c := newEndpoint(t)
		if cerr, aerr := dialAccept(ctx, ln, "tcp", ln.Addr().String(), c.qp, s.qp, nil, nil); cerr != nil || aerr != nil {
			t.Fatalf("connect: %v, accept: %v", cerr, aerr)
		}
		t.Cleanup(func() { c.qp.Close(); s.qp.Close() })
		servers, clients = append(servers, s), append(clients, c)
		s.cq.Arm(iwarp.NotifySolicited)
	}
	// A plain Send on connection 0 must not fire the solicited-only arm.
	if err := clients[0].qp.Send(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := servers[0].cq.Next(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	if cq, err := ch.Wait(short); err == nil {
		t.Fatalf("an unsolicited completion fired %p", cq)
	}
	cancel()
	// A solicited Send on connection 1 fires, naming server 1's CQ.
	if err := clients[1].qp.PostSend(iwarp.SendWR{ID: 9, Op: iwarp.OpSend, Flags: iwarp.Solicited}); err != nil {
		t.Fatal(err)
	}
	cq, err := ch.Wait(ctx)
	if err != nil || cq != servers[1].cq {
		t.Fatalf("woke for %p (%v), want server 1's CQ", cq, err)
	}
	c, err := cq.Next(ctx)
	if err != nil || !c.Solicited || c.Op != iwarp.OpRecv {
		t.Fatalf("completion %+v %v", c, err)
	}
	// Arm for any completion: the next plain Send fires.
	servers[0].cq.Arm(iwarp.NotifyNext)
	if err := clients[0].qp.Send(ctx); err != nil {
		t.Fatal(err)
	}
	if cq, err := ch.Wait(ctx); err != nil || cq != servers[0].cq {
		t.Fatalf("woke for %p (%v), want server 0's CQ", cq, err)
	}
}
