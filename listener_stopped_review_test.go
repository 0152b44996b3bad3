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

// TestListenerStoppedWaitsForStartups (review 4, finding 1): after the
// net.Listener is closed under the Listener, Accept still hands out the
// Request of a connection accepted before the close whose startup was in
// flight (it failed with ErrListenerFailed at once, and a later Accept
// returned the request); it fails only once no startup can queue one.
func TestListenerStoppedWaitsForStartups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl := newPipeListener()
		l := iwarp.NewListener(pl, nil)
		defer l.Close()
		c := pl.dial()
		defer c.Close()
		synctest.Wait() // accepted by the Listener; its startup waits for the Request
		pl.Close()
		synctest.Wait() // the accept loop stopped

		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		done := make(chan error, 1)
		var got *iwarp.ConnRequest
		go func() {
			r, err := l.Accept(ctx)
			got = r
			done <- err
		}()
		synctest.Wait()
		go c.Write(requestBytes()) // the peer's Request, 0 s into a 5 s startup
		synctest.Wait()
		err := <-done
		if err != nil {
			r2, err2 := l.Accept(ctx)
			if r2 != nil {
				r2.Reject(nil)
			}
			t.Fatalf("Accept: %v while a startup accepted before the close was in flight; the next Accept: %v, %v", err, r2 != nil, err2)
		}
		got.Reject(nil)
	})
}

// TestListenerTimeoutErrorBacksOff (review 4, finding 2): an accept error
// that is a timeout (a caller's listener past its deadline) backs off like
// any other; it was retried at once, forever (533,810 calls in 50 ms).
func TestListenerTimeoutErrorBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := &failingListener{pipeListener: newPipeListener(), err: os.ErrDeadlineExceeded}
		l := iwarp.NewListener(cl, nil)
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		n := cl.calls.Load()
		l.Close()
		if n > 5 { // at 0, 5, 15 and 35 ms
			t.Errorf("%d accept calls in 50 ms of timeout errors, want 4 (5, 10, 20 ms back-off)", n)
		}
	})
}

// TestListenerCloseAfterStop (review 4, note 3): on a real TCP listener
// closed under the Listener, the documented "Close the Listener" returns
// nil, not the second close's error.
func TestListenerCloseAfterStop(t *testing.T) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := iwarp.NewListener(tl, nil)
	tl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.Accept(ctx); !errors.Is(err, iwarp.ErrListenerFailed) {
		t.Fatalf("Accept: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close after ErrListenerFailed: %v", err)
	}
}
