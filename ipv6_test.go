package iwarp_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestIPv6AndDualStack: listeners and dials on [::1], and a dual-stack
// listener reached over IPv4 and IPv6, each carrying an RDMA Read.
func TestIPv6AndDualStack(t *testing.T) {
	if l, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	} else {
		l.Close()
	}
	cases := []struct{ name, listen, dialHost, network string }{
		{"v6-only", "[::1]:0", "::1", "tcp6"},
		{"dual-stack-v4", "[::]:0", "127.0.0.1", "tcp"},
		{"dual-stack-v6", "[::]:0", "::1", "tcp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ln, err := iwarp.Listen(c.network, c.listen, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			a, b := newEndpoint(t), newEndpoint(t)
			defer a.qp.Close()
			defer b.qp.Close()
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			if cerr, aerr := dialAccept(ctx, ln, c.network, net.JoinHostPort(c.dialHost, port), a.qp, b.qp, nil, nil); cerr != nil || aerr != nil {
				t.Fatalf("connect: %v, accept: %v", cerr, aerr)
			}
			if peer := a.qp.Attributes().PeerAddr; strings.Contains(c.dialHost, ":") != strings.Contains(peer, "[") {
				t.Fatalf("peer address %s for a dial to %s", peer, c.dialHost)
			}
			src, _ := b.pd.RegisterMemory([]byte("over IPv6 or IPv4"), iwarp.AccessRemoteRead)
			sink, _ := a.pd.RegisterMemory(make([]byte, 17), iwarp.AccessLocalWrite)
			if err := a.qp.Read(ctx, src.Remote(), sink.SGE(0, 17)); err != nil {
				t.Fatal(err)
			}
			if string(sink.Bytes()) != "over IPv6 or IPv4" {
				t.Fatalf("read %q", sink.Bytes())
			}
		})
	}
}
