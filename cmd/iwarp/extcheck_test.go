package main

import (
	"context"
	"net/netip"
	"testing"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/rping"
)

// rpingResponder starts a persistent rping server on a free loopback port,
// offering no RDMAP extension if noExt, until the test ends.
func rpingResponder(t *testing.T, noExt bool) string {
	t.Helper()
	o := &rping.Options{Conn: iwarp.ConnOptions{Interop: &iwarp.InteropOptions{HideExtensions: noExt}}}
	s, err := rping.Listen(netip.MustParseAddrPort("127.0.0.1:0"), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.ServePersistent(ctx, nil)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		s.Close()
	})
	return s.Addr().String()
}

// TestExtcheckAgainstPeerWithoutExtensions: against our rping server
// offering no extension, RFC 7306 calls are refused locally with nothing
// sent, and a Write to an unknown STag surfaces the server's Terminate
// DDP/1/0x00 with the Read behind it flushed.
func TestExtcheckAgainstPeerWithoutExtensions(t *testing.T) {
	addr := rpingResponder(t, true)
	runExitCases(t, []exitCase{
		{name: "no-ext", args: []string{"extcheck", "-a", addr, "-case", "no-ext"}, code: exitOK, out: "extcheck no-ext: PASS"},
		{name: "unknown-stag", args: []string{"extcheck", "-a", addr, "-case", "unknown-stag", "-settle", "0"}, code: exitOK,
			out: "extcheck unknown-stag: received Terminate DDP/1/0x00"},
	})
}
