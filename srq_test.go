package iwarp_test

import (
	"errors"
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestSRQSharedByQPs: two QPs draw their receives from one SRQ; Sends and
// Immediate Data (RFC 7306) on either consume its receives in order, each
// completion arrives on its own QP's CQ, and the limit event fires once
// fewer receives than the limit remain.
func TestSRQSharedByQPs(t *testing.T) {
	ctx := ctx10(t)
	server := newEndpoint(t)
	srq, err := server.pd.NewSRQ(&iwarp.SRQConfig{Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := server.pd.RegisterMemory(make([]byte, 8*16), iwarp.AccessLocalWrite)
	for i := 0; i < 6; i++ {
		if err := srq.PostRecv(iwarp.RecvWR{ID: uint64(100 + i), SGL: []iwarp.SGE{buf.SGE(16*i, 16)}}); err != nil {
			t.Fatal(err)
		}
	}
	srq.Arm(3)
	var servers, clients []*endpoint
	for i := 0; i < 2; i++ {
		cq := mustCQ(t, server.dev)
		qp, err := server.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SRQ: srq})
		if err != nil {
			t.Fatal(err)
		}
		if err := qp.PostRecv(iwarp.RecvWR{ID: 1}); !errors.Is(err, iwarp.ErrInvalidWR) {
			t.Fatalf("PostRecv on a QP with an SRQ: %v", err)
		}
		s := &endpoint{dev: server.dev, pd: server.pd, cq: cq, qp: qp}
		c := newEndpoint(t)
		connect(t, c, s, nil, nil)
		servers, clients = append(servers, s), append(clients, c)
	}
	msg, _ := clients[0].pd.RegisterMemory([]byte("hello, SRQ"), 0)
	if err := clients[0].qp.Send(ctx, msg.SGE(0, 10)); err != nil {
		t.Fatal(err)
	}
	c, err := servers[0].cq.Next(ctx)
	if err != nil || c.ID != 100 || c.Len != 10 || c.QPNum != servers[0].qp.Num() {
		t.Fatalf("first receive %+v %v", c, err)
	}
	if err := clients[1].qp.ImmediateData(ctx, 0xabcdef, 0); err != nil {
		t.Fatal(err)
	}
	c, err = servers[1].cq.Next(ctx)
	if err != nil || c.ID != 101 || !c.HasImmediate || c.Immediate != 0xabcdef || c.QPNum != servers[1].qp.Num() {
		t.Fatalf("Immediate Data through the SRQ %+v %v", c, err)
	}
	if srq.Posted() != 4 {
		t.Fatalf("%d receives left, want 4", srq.Posted())
	}
	// Two more Sends leave 2 < 3 posted: the limit event fires.
	for i := 0; i < 2; i++ {
		m, _ := clients[i].pd.RegisterMemory([]byte("again"), 0)
		if err := clients[i].qp.Send(ctx, m.SGE(0, 5)); err != nil {
			t.Fatal(err)
		}
		if c, err := servers[i].cq.Next(ctx); err != nil || c.ID != uint64(102+i) {
			t.Fatalf("receive %+v %v", c, err)
		}
	}
	select {
	case ev := <-server.dev.Events():
		if ev.Type != iwarp.EventSRQLimit || ev.SRQ != srq {
			t.Fatalf("event %v", ev.Type)
		}
	case <-ctx.Done():
		t.Fatal("no SRQ limit event")
	}
	if string(buf.Bytes()[:10]) != "hello, SRQ" {
		t.Fatalf("buffer %q", buf.Bytes()[:10])
	}
}
