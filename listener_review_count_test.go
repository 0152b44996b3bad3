package iwarp_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goiwarp/iwarp"
)

// Adversarial review of the Listener's connection count (issue 22).

// TestListenerReviewRejectBadPrivateDataClosesConn: a Reject whose
// private data is too long fails (the request is answered: a second
// Reject is refused), and the Listener takes the connection out of its
// count and its startups. The connection must then be closed: otherwise it
// stays open for ever, counted nowhere, timed out by nothing, and not
// closed by Listener.Close. A peer that makes the application reject it
// with a long reason (its own private data echoed, say) keeps a socket
// open past MaxConnections.
func TestListenerReviewRejectBadPrivateDataClosesConn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const startupTimeout = 2 * time.Second
		pl, ln := listenPipes(t, &iwarp.ListenConfig{StartupTimeout: startupTimeout, MaxConnections: 1})
		start := time.Now()
		c := sendRequest(t, pl)
		req, err := ln.Accept(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := req.Reject(make([]byte, 600)); err == nil {
			t.Fatal("Reject with 600 bytes of private data succeeded")
		}
		if err := req.Reject(nil); err == nil {
			t.Fatal("a second Reject succeeded")
		}
		open, startups := iwarp.ListenerCounts(ln)
		ln.Close()
		c.SetReadDeadline(start.Add(4 * startupTimeout))
		if !closedByServer(c) {
			t.Errorf("after a failed Reject (count %d, %d in startup) and Listener.Close, the connection is still open %v after the TCP accept",
				open, startups, time.Since(start))
		}
	})
}

// TestListenerReviewSharedQPCountLeak: two ConnRequest.Accept calls given
// the same idle QP (an application error) must leave the count right: the
// second is refused at once (ErrInvalidConfig, the QP is claimed by the
// first) and its request left unanswered for the application to answer;
// the first's connection passes its count to the QP, released at the QP's
// teardown. (Review finding: the losing Accept's failed start released the
// count the winner had passed to the QP, so the count stayed 1 for ever.)
func TestListenerReviewSharedQPCountLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, ln := listenPipes(t, nil)
		ctx := context.Background()
		release := []chan struct{}{make(chan struct{}), make(chan struct{})}
		var ncs []net.Conn
		var reqs []*iwarp.ConnRequest
		ep := newEndpoint(t)
		results := []chan error{make(chan error, 1), make(chan error, 1)}
		for i := range 2 {
			nc := pl.dial()
			ncs = append(ncs, nc)
			go connectHeld(ctx, nc, release[i], false) // its connection closed below
			req, err := ln.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, req)
			go func() { results[i] <- req.Accept(ctx, ep.qp, nil) }()
			synctest.Wait() // the first Accept holds the QP before the second
		}
		var okN int
		for i := range 2 {
			close(release[i])
			err := <-results[i]
			switch {
			case err == nil:
				okN++
			case errors.Is(err, iwarp.ErrInvalidConfig):
				// The QP was taken: the request is left unanswered, and
				// the application refuses it.
				if rerr := reqs[i].Reject(nil); rerr != nil {
					t.Errorf("Reject after the refused Accept: %v", rerr)
				}
			default:
				t.Errorf("Accept %d: %v", i, err)
			}
		}
		if okN != 1 {
			t.Fatalf("%d Accepts on the shared QP succeeded, want 1", okN)
		}
		ep.qp.Close()
		<-ep.qp.Done()
		for _, nc := range ncs {
			nc.Close()
		}
		synctest.Wait()
		if open, startups := iwarp.ListenerCounts(ln); open != 0 || startups != 0 {
			t.Errorf("after the QP's teardown and both peers gone: count %d, %d in startup; want 0, 0", open, startups)
		}
	})
}
