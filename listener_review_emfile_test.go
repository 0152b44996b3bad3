package iwarp_test

import (
	"context"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goiwarp/iwarp"
)

// fdLimitListener is a pipeListener whose process may hold at most limit
// of its connections open at once, as a file descriptor limit
// (RLIMIT_NOFILE) does: at the limit, Accept fails at once with EMFILE,
// as accept(2) does (it takes the descriptor before it looks for a
// connection), and the connection stays in the queue.
type fdLimitListener struct {
	*pipeListener
	limit int

	mu   sync.Mutex
	open int
}

func (fl *fdLimitListener) Accept() (net.Conn, error) {
	fl.mu.Lock()
	if fl.open >= fl.limit {
		fl.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	fl.open++
	fl.mu.Unlock()
	c, err := fl.pipeListener.Accept()
	if err != nil {
		fl.mu.Lock()
		fl.open--
		fl.mu.Unlock()
		return nil, err
	}
	return &fdConn{Conn: c, fl: fl}, nil
}

// fdConn gives its descriptor back when closed.
type fdConn struct {
	net.Conn
	fl   *fdLimitListener
	once sync.Once
}

func (c *fdConn) Close() error {
	c.once.Do(func() {
		c.fl.mu.Lock()
		c.fl.open--
		c.fl.mu.Unlock()
	})
	return c.Conn.Close()
}

// TestListenerReviewSilentPeersAtFDLimit: when silent peers hold every
// file descriptor the process may open (a limit below MaxConnections, or
// MaxPending, plus what else the process holds), accept(2) fails with
// EMFILE: the accept loop then sheds the stalest startup, whose descriptor
// is given back, and takes the clean client behind them at once. (Review
// finding: it only slept 10 ms and tried again, so the client waited for
// the silent peers' StartupTimeout, and an attacker reopening them kept
// everyone out.)
func TestListenerReviewSilentPeersAtFDLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const fds = 4
		fl := &fdLimitListener{pipeListener: newPipeListener(), limit: fds}
		ln := iwarp.NewListener(fl, nil) // MaxPending 64, MaxConnections 4096
		ctx, cancel := context.WithCancel(context.Background())
		a := newAcceptor(t)
		a.serve(ctx, ln, nil)
		defer func() { ln.Close(); cancel(); a.close() }()
		for range fds {
			c := fl.dial()
			defer c.Close()
		}
		synctest.Wait()
		start := time.Now()
		client := newEndpoint(t)
		defer client.qp.Close()
		if err := client.qp.ConnectConn(ctx, fl.dial(), &iwarp.ConnOptions{Timeout: time.Second}); err != nil {
			t.Fatalf("a clean client behind %d silent connections holding every descriptor: %v after %v", fds, err, time.Since(start))
		}
	})
}
