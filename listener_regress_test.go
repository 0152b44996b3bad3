package iwarp_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/mpa"
)

// The Listener's limits under attack (issue 22), over in-memory connections
// in testing/synctest bubbles: time is the bubble's, so a bound is checked
// exactly and nothing waits for real time. listener_flood_test.go repeats
// them at scale over loopback TCP.

// TestListenerSilentPeersDoNotLockOut (finding 1): with its MaxPending
// slots full of peers that send nothing, a Listener still accepts, and a
// clean client connects at once; the silent peers pushed out are the
// oldest ones.
func TestListenerSilentPeersDoNotLockOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxPending, silentN = 4, 16
		pl, _, ctx := servePipes(t, &iwarp.ListenConfig{MaxPending: maxPending})

		silent := make([]net.Conn, silentN)
		for i := range silent {
			silent[i] = pl.dial()
			defer silent[i].Close()
		}
		synctest.Wait()
		start := time.Now()
		client := newEndpoint(t)
		defer client.qp.Close()
		if err := client.qp.ConnectConn(ctx, pl.dial(), &iwarp.ConnOptions{Timeout: time.Second}); err != nil {
			t.Fatalf("a clean client behind %d silent connections (MaxPending %d): %v after %v", silentN, maxPending, err, time.Since(start))
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the clean client waited %v behind the silent connections", d)
		}
		// Admitting the 12 last silent ones and the client shed the 13
		// oldest; the 3 newest are still in startup.
		for i, c := range silent {
			c.SetReadDeadline(time.Now().Add(time.Millisecond))
			if closed, want := closedByServer(c), i < silentN+1-maxPending; closed != want {
				t.Errorf("silent connection %d: closed by the server %v, want %v", i, closed, want)
			}
		}
	})
}

// TestListenerStartupTimeoutCoversRTR (finding 3): a peer that sends its
// Request and never its RTR fails the server's Accept at the Listener's
// StartupTimeout counted from the TCP accept, not at ConnOptions.Timeout
// counted from the Accept call; the application took a second to call it.
func TestListenerStartupTimeoutCoversRTR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const startupTimeout = 2 * time.Second
		pl, ln := listenPipes(t, &iwarp.ListenConfig{StartupTimeout: startupTimeout})
		start := time.Now()
		c := sendRequest(t, pl)
		req, err := ln.Accept(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the application is slow to answer
		replied := make(chan error, 1)
		go func() { replied <- readReply(c) }()
		err = req.Accept(context.Background(), newEndpoint(t).qp, nil) // ConnOptions.Timeout: 5 s
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Accept with the RTR never sent: %v, want a timeout", err)
		}
		if d := time.Since(start); d != startupTimeout {
			t.Errorf("Accept failed %v after the TCP accept, want the StartupTimeout, %v", d, startupTimeout)
		}
		if err := <-replied; err != nil {
			t.Fatalf("no Reply: %v", err)
		}
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if !closedByServer(c) {
			t.Error("the connection is still open after its StartupTimeout")
		}
	})
}

// TestListenerUnansweredRequestTimesOut (finding 3): a Request that the
// application neither accepts nor rejects is closed at the StartupTimeout,
// whether it still waits in the Listener or was taken by Accept; an Accept
// called after it fails at once.
func TestListenerUnansweredRequestTimesOut(t *testing.T) {
	for _, taken := range []bool{false, true} {
		name := map[bool]string{false: "never-taken", true: "taken-not-answered"}[taken]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const startupTimeout = 2 * time.Second
				pl, ln := listenPipes(t, &iwarp.ListenConfig{StartupTimeout: startupTimeout})
				start := time.Now()
				c := sendRequest(t, pl)
				var req *iwarp.ConnRequest
				if taken {
					var err error
					if req, err = ln.Accept(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				c.SetReadDeadline(start.Add(4 * startupTimeout))
				if !closedByServer(c) {
					t.Fatalf("the unanswered request's connection is open %v after the TCP accept", time.Since(start))
				}
				if d := time.Since(start); d != startupTimeout {
					t.Errorf("closed %v after the TCP accept, want the StartupTimeout, %v", d, startupTimeout)
				}
				if req != nil {
					err := req.Accept(context.Background(), newEndpoint(t).qp, nil)
					if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != startupTimeout {
						t.Errorf("Accept after the StartupTimeout: %v after %v, want a timeout at once", err, time.Since(start))
					}
				}
			})
		})
	}
}

// TestListenerPendingCoversRTRWait (finding 3): MaxPending bounds the
// connections waiting for their RTR inside ConnRequest.Accept too: with
// peers that send a Request and then nothing, no more than MaxPending
// Accept calls are in progress at once, and the others' connections were
// closed.
func TestListenerPendingCoversRTRWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxPending, n = 4, 12
		pl, a, _ := servePipes(t, &iwarp.ListenConfig{MaxPending: maxPending})
		var wg sync.WaitGroup
		replies := make([]error, n)
		for i := range n {
			c := sendRequest(t, pl)
			wg.Add(1)
			go func() { defer wg.Done(); replies[i] = readReply(c) }()
			synctest.Wait() // its Reply is sent: the server waits for its RTR
			if m := a.inAccept.Load(); m > maxPending {
				t.Errorf("after %d clients, %d Accept calls wait for an RTR, MaxPending %d", i+1, m, maxPending)
			}
		}
		wg.Wait()
		synctest.Wait()
		for i, err := range replies {
			if err != nil {
				t.Errorf("client %d: no Reply: %v", i, err)
			}
		}
		if f := a.failures.Load(); f != n-maxPending {
			t.Errorf("%d Accept calls failed, want the %d shed", f, n-maxPending)
		}
	})
}

// TestListenerMaxConnectionsCountsFromAccept (finding 2): MaxConnections
// counts a connection from its TCP accept, so that it holds whatever the
// order of the peers' Requests and RTRs: clients that all send their
// Requests before any sends its RTR, and MPA Rev 1 clients (no RTR) that
// all connect before any sends its Request, get no more than
// MaxConnections QPs into StateRTS.
func TestListenerMaxConnectionsCountsFromAccept(t *testing.T) {
	for _, rev1 := range []bool{false, true} {
		name := map[bool]string{false: "RTRs-after-all-Requests", true: "Rev1-Requests-after-all-connects"}[rev1]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const maxConns, n = 5, 20
				pl, a, ctx := servePipes(t, &iwarp.ListenConfig{MaxConnections: maxConns})
				release := make(chan struct{})
				var wg sync.WaitGroup
				conns := make([]*mpa.Conn, n)
				for i := range n {
					c := pl.dial()
					defer c.Close()
					wg.Add(1)
					go func() {
						defer wg.Done()
						conns[i], _ = connectHeld(ctx, c, release, rev1)
					}()
				}
				synctest.Wait() // every client holds its RTR (Rev 1: Request), or failed
				close(release)
				wg.Wait()
				synctest.Wait()
				for _, c := range conns {
					if c != nil {
						defer c.Close()
					}
				}
				if m := a.maxLive.Load(); m > maxConns || m == 0 {
					t.Errorf("%d connections reached RTS with MaxConnections %d", m, maxConns)
				}
			})
		})
	}
}
