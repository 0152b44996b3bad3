package iwarp_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mpa"
)

// The flood clients of TestListenerFlood and TestListenerFloodServerRSS.

// silentFlood is a set of attackers that connect, send nothing, and
// reconnect as soon as the server closes their connection.
type silentFlood struct {
	mu       sync.Mutex
	stopped  bool
	conns    map[net.Conn]bool
	reopened atomic.Int64 // connections the server closed
	wg       sync.WaitGroup
}

// startSilentFlood starts n attackers on addr and returns once each has
// its first connection open.
func startSilentFlood(t testing.TB, addr string, n int) *silentFlood {
	f := &silentFlood{conns: map[net.Conn]bool{}}
	var opened sync.WaitGroup
	for range n {
		f.wg.Add(1)
		opened.Add(1)
		go func() {
			defer f.wg.Done()
			first := sync.OnceFunc(opened.Done)
			defer first()
			var b [1]byte
			for {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Errorf("attacker: %v", err)
					return
				}
				if !f.track(c) {
					c.Close()
					return
				}
				first()
				_, _ = c.Read(b[:]) // until the server (or stop) closes it
				f.untrack(c)
				f.reopened.Add(1)
			}
		}()
	}
	opened.Wait()
	return f
}

// track registers c to be closed by stop; false once stopped.
func (f *silentFlood) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.conns[c] = true
	}
	return !f.stopped
}

func (f *silentFlood) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

// stop closes the attackers' connections and waits for them to end.
func (f *silentFlood) stop() {
	f.mu.Lock()
	f.stopped = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// checkCleanClients connects n QPs to addr one after the other; each must
// connect within 1 s.
func checkCleanClients(t *testing.T, ctx context.Context, addr string, n int) {
	for i := range n {
		d, err := cleanConnect(t, ctx, addr)
		if err != nil {
			t.Errorf("clean client %d: %v after %v", i, err, d)
		} else if d > time.Second {
			t.Errorf("clean client %d connected after %v, want within 1 s", i, d)
		}
	}
}

// lateRTRs runs n MPA Initiators against addr that send their Requests at
// once and hold their RTRs until every one of them holds its RTR or
// failed; then it calls atBarrier, lets the RTRs go, and waits for the
// Initiators. It returns what closes their connections (also called when
// the test ends).
func lateRTRs(t *testing.T, ctx context.Context, addr string, n int, atBarrier func()) (closeAll func()) {
	release := make(chan struct{})
	var arrived, done sync.WaitGroup
	conns := make([]*mpa.Conn, n)
	closeAll = sync.OnceFunc(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	t.Cleanup(closeAll)
	for i := range n {
		arrived.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			arrive := sync.OnceFunc(arrived.Done)
			defer arrive()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			conns[i], _ = connectHeldNotify(ctx, nc, release, false, arrive)
		}()
	}
	arrived.Wait()
	atBarrier()
	close(release)
	done.Wait()
	return closeAll
}

// requestsWithoutRTR opens n connections to addr and sends an MPA Request
// on each, and nothing more.
func requestsWithoutRTR(t *testing.T, addr string, n int) []net.Conn {
	conns := make([]net.Conn, 0, n)
	req := requestBytes()
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			closeConns(conns)
			t.Fatalf("client %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := c.Write(req); err != nil {
			closeConns(conns)
			t.Fatalf("client %d: %v", i, err)
		}
	}
	return conns
}
