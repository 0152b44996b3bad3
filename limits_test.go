package iwarp_test

import (
	"context"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestListenerMaxConnections: a Listener with MaxConnections 2 closes a
// third connection before its MPA startup while two are open, and accepts
// again once one of them is torn down.
func TestListenerMaxConnections(t *testing.T) {
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", &iwarp.ListenConfig{MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	accepting := make(chan struct{})
	defer func() { cancel(); <-accepting }()
	go func() {
		defer close(accepting)
		for {
			req, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			ep := newEndpoint(t)
			t.Cleanup(func() { ep.qp.Close() })
			_ = req.Accept(ctx, ep.qp, nil)
		}
	}()
	dial := func() (*endpoint, error) {
		ep := newEndpoint(t)
		t.Cleanup(func() { ep.qp.Close() })
		return ep, ep.qp.Connect(ctx, "tcp", ln.Addr().String(), &iwarp.ConnOptions{Timeout: 3 * time.Second})
	}
	first, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the server side of both is running
	if _, err := dial(); err == nil {
		t.Fatal("a third connection was accepted with MaxConnections 2")
	}
	first.qp.Close() // the server's QP sees the close and is torn down
	deadline := time.Now().Add(5 * time.Second)
	for {
		ep, err := dial()
		if err == nil {
			ep.qp.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection accepted after one closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
