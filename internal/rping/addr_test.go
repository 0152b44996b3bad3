package rping

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestResolve: literal addresses resolve as they are; a name that cannot
// resolve is getaddrinfo's failure, with rping's message and exit status.
func TestResolve(t *testing.T) {
	for _, h := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1"} {
		a, err := Resolve(context.Background(), h)
		if err != nil || !a.IsLoopback() {
			t.Errorf("Resolve(%q) = %v, %v", h, a, err)
		}
	}
	_, err := Resolve(context.Background(), "nosuch.invalid") // RFC 6761: never resolves
	var ae *AddrError
	if !errors.As(err, &ae) || ae.Code != eaiNoName && ae.Code != eaiAgain {
		t.Fatalf("Resolve(nosuch.invalid): %v", err)
	}
	for _, c := range []struct {
		code, status int
		msg          string
	}{
		{eaiNoName, 254, "getaddrinfo failed (Name or service not known) - invalid hostname or IP address"},
		{eaiAgain, 253, "getaddrinfo failed (Temporary failure in name resolution) - invalid hostname or IP address"},
		{eaiFail, 252, "getaddrinfo failed (Non-recoverable failure in name resolution) - invalid hostname or IP address"},
	} {
		e := &AddrError{Host: "h", Code: c.code}
		if e.Error() != c.msg || e.ExitStatus() != c.status {
			t.Errorf("code %d: %q, status %d", c.code, e.Error(), e.ExitStatus())
		}
	}
}

// TestErrorWords: errors are worded as perror and rdma_cm word them.
func TestErrorWords(t *testing.T) {
	if got := strerror(fmt.Errorf("dial: %w", syscall.ECONNREFUSED)); got != "Connection refused" {
		t.Errorf("strerror(ECONNREFUSED) = %q", got)
	}
	if got := strerror(os.ErrDeadlineExceeded); got != "Connection timed out" {
		t.Errorf("strerror(deadline) = %q", got)
	}
	for _, c := range []struct {
		err    error
		event  string
		status int
	}{
		{&iwarp.RejectedError{}, "RDMA_CM_EVENT_REJECTED", -111},
		{context.DeadlineExceeded, "RDMA_CM_EVENT_UNREACHABLE", -110},
		{io.EOF, "RDMA_CM_EVENT_REJECTED", -104},
		{errors.New("bad frame"), "RDMA_CM_EVENT_CONNECT_ERROR", -71},
	} {
		if ev, st := setupEvent(c.err); ev != c.event || st != c.status {
			t.Errorf("setupEvent(%v) = %s, %d; want %s, %d", c.err, ev, st, c.event, c.status)
		}
	}
}
