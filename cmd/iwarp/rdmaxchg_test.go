package main

import (
	"regexp"
	"strings"
	"testing"
)

// startRdmaServer runs `iwarp rdma-server` with args on a free port and
// returns the port once it listens.
func startRdmaServer(t *testing.T, args ...string) (port string, done <-chan cliResult) {
	t.Helper()
	out, done := startCLI(t, "rdma-server: listening on ", append([]string{"rdma-server", "-p", "0"}, args...)...)
	m := regexp.MustCompile(`listening on 127\.0\.0\.1:(\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no address in %q", out.String())
	}
	return m[1], done
}

// TestRdmaExchangeLoopback: our rdma-client and rdma-server exchange their
// 16-byte messages; each reports the other's pattern and "end 0", as
// librdmacm's examples report their run. The client takes rdma_client's
// -s, the server listens on 127.0.0.1 by default.
func TestRdmaExchangeLoopback(t *testing.T) {
	port, done := startRdmaServer(t)
	code, cout, cerr := runCLI(t, "rdma-client", "-s", "127.0.0.1", "-p", port)
	if code != 0 || !strings.Contains(cout, `received "iwarp-rdma-xchg!"`) || !strings.HasSuffix(cout, "rdma-client: end 0\n") {
		t.Fatalf("client exit %d:\n%s%s", code, cout, cerr)
	}
	r := waitCLI(t, done)
	if r.code != 0 || !strings.Contains(r.out, `received "iwarp-rdma-xchg!" (iwarp's pattern) from 127.0.0.1:`) ||
		!strings.HasPrefix(r.out, "rdma-server: start\n") || !strings.HasSuffix(r.out, "rdma-server: end 0\n") {
		t.Fatalf("server exit %d:\n%s%s", r.code, r.out, r.errOut)
	}
}
