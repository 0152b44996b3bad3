package iwarp_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goiwarp/iwarp"
)

// The Listener's shedding and deadlines in detail, over in-memory
// connections in testing/synctest bubbles.

// TestListenerShedAcceptFails: the Accept of a connection shed to admit a
// newer one fails with ErrShed, its peer sees the connection closed, and
// its QP stays idle, ready for another Accept.
func TestListenerShedAcceptFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, ln := listenPipes(t, &iwarp.ListenConfig{MaxPending: 2})
		ctx := context.Background()
		type accepted struct {
			qp  *iwarp.QP
			err error
		}
		results := make(chan accepted, 3)
		clients := make([]net.Conn, 3)
		for i := range clients {
			clients[i] = sendRequest(t, pl)
			req, err := ln.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ep := newEndpoint(t)
			t.Cleanup(func() { ep.qp.Close() })
			go func() { results <- accepted{ep.qp, req.Accept(ctx, ep.qp, nil)} }()
			if err := readReply(clients[i]); err != nil {
				t.Fatalf("client %d: no Reply: %v", i, err)
			}
			synctest.Wait() // its Accept waits for the RTR
		}
		r := <-results // the first client's, shed when the third arrived
		if !errors.Is(r.err, iwarp.ErrShed) {
			t.Errorf("the shed connection's Accept: %v, want ErrShed", r.err)
		}
		if r.qp.State() != iwarp.StateIdle {
			t.Errorf("the shed connection's QP is %v, want idle", r.qp.State())
		}
		clients[0].SetReadDeadline(time.Now().Add(time.Millisecond))
		if !closedByServer(clients[0]) {
			t.Error("the shed connection is still open")
		}
		if len(results) != 0 {
			t.Errorf("%d more Accept calls ended, want the 2 newest still waiting for their RTRs", len(results))
		}
		ln.Close()
		for _, c := range clients {
			c.Close()
		}
		for range 2 {
			<-results
		}
	})
}

// TestReadConnRequestTimeoutCoversAccept: ReadConnRequest's StartupTimeout
// bounds the whole startup from the call, the wait for the RTR inside
// Accept included.
func TestReadConnRequestTimeoutCoversAccept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const startupTimeout = 2 * time.Second
		c, s := net.Pipe()
		defer c.Close()
		start := time.Now()
		go c.Write(requestBytes())
		req, err := iwarp.ReadConnRequest(context.Background(), s, &iwarp.ListenConfig{StartupTimeout: startupTimeout})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		go readReply(c)
		ep := newEndpoint(t)
		defer ep.qp.Close()
		err = req.Accept(context.Background(), ep.qp, nil)
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != startupTimeout {
			t.Errorf("Accept without an RTR: %v after %v, want a timeout after %v", err, time.Since(start), startupTimeout)
		}
	})
}

// TestListenerSecondAnswer: a second Accept (or a Reject after Accept)
// fails and leaves the established connection alone.
func TestListenerSecondAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		_, _, connected, req := clientRequest(t)
		server := newEndpoint(t)
		defer server.qp.Close()
		if err := req.Accept(ctx, server.qp, nil); err != nil {
			t.Fatal(err)
		}
		if err := <-connected; err != nil {
			t.Fatal(err)
		}
		other := newEndpoint(t)
		defer other.qp.Close()
		if err := req.Accept(ctx, other.qp, nil); err == nil {
			t.Error("a second Accept succeeded")
		}
		if err := req.Reject(nil); err == nil {
			t.Error("a Reject after Accept succeeded")
		}
		synctest.Wait()
		if s := server.qp.State(); s != iwarp.StateRTS {
			t.Errorf("the accepted QP is %v after a second answer, want RTS", s)
		}
	})
}

// TestListenerCloseClosesWaitingRequests: Close closes the connections
// whose request Accept has not taken; a request already taken can still
// be accepted.
func TestListenerCloseClosesWaitingRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pl, ln, connected, taken := clientRequest(t)
		waiting := sendRequest(t, pl)
		synctest.Wait() // its Request is queued
		ln.Close()
		waiting.SetReadDeadline(time.Now().Add(time.Millisecond))
		if !closedByServer(waiting) {
			t.Error("a request not taken by Accept is still open after Close")
		}
		server := newEndpoint(t)
		defer server.qp.Close()
		if err := taken.Accept(ctx, server.qp, nil); err != nil {
			t.Errorf("Accept of a request taken before Close: %v", err)
		}
		if err := <-connected; err != nil {
			t.Error(err)
		}
	})
}

// clientRequest starts a Listener over pipes and a client QP's Connect to
// it, and returns the request Accept took, with the Connect's result to
// come on connected. All is closed when the test ends.
func clientRequest(t *testing.T) (*pipeListener, *iwarp.Listener, <-chan error, *iwarp.ConnRequest) {
	pl, ln := listenPipes(t, nil)
	client := newEndpoint(t)
	t.Cleanup(func() { client.qp.Close() })
	connected := make(chan error, 1)
	go func() { connected <- client.qp.ConnectConn(context.Background(), pl.dial(), nil) }()
	req, err := ln.Accept(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pl, ln, connected, req
}
