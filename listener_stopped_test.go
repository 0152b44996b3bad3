package iwarp_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestListenerUnderlyingClosed: when the net.Listener given to NewListener
// is closed by someone else, the accept loop stops (it retried every
// 10 ms forever before), Accept first hands out the request already read,
// then fails at once with ErrListenerFailed wrapping net.ErrClosed, and
// Close returns.
func TestListenerUnderlyingClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl := newPipeListener()
		l := iwarp.NewListener(pl, nil)
		c := pl.dial()
		defer c.Close()
		go c.Write(requestBytes())
		synctest.Wait() // the Request is read and queued
		pl.Close()
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		req, err := l.Accept(ctx)
		if err != nil {
			t.Fatalf("the request read before the close: %v", err)
		}
		req.Reject(nil)
		start := time.Now()
		_, err = l.Accept(ctx)
		if !errors.Is(err, iwarp.ErrListenerFailed) || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after the close: %v, want ErrListenerFailed wrapping net.ErrClosed", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Accept waited %v", d)
		}
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

// TestListenerAcceptErrorBacksOff: a caller's listener that keeps failing
// is retried with a back-off that grows to a second, not every 10 ms, and
// Close ends the wait at once.
func TestListenerAcceptErrorBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := &failingListener{pipeListener: newPipeListener(), err: errors.New("accept: something went wrong")}
		l := iwarp.NewListener(fl, nil)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		// 5, 10, 20, ..., 640 ms, then 1 s each: 8 + 8 calls, and the first.
		if n := fl.calls.Load(); n < 10 || n > 20 {
			t.Errorf("%d accept calls in 10 s of errors, want about 17 (back-off to 1 s)", n)
		}
		start := time.Now()
		l.Close()
		if d := time.Since(start); d != 0 {
			t.Errorf("Close waited %v for the back-off", d)
		}
	})
}

// failingListener's Accept fails with err until it is closed.
type failingListener struct {
	*pipeListener
	err   error
	calls atomic.Int64
}

func (fl *failingListener) Accept() (net.Conn, error) {
	fl.calls.Add(1)
	select {
	case <-fl.done:
		return nil, net.ErrClosed
	default:
		return nil, fl.err
	}
}
