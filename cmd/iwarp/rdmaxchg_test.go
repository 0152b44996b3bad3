package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRdmaExchangeLoopback: our rdma-client and rdma-server exchange their
// 16-byte messages; each reports the other's pattern and "end 0", as
// librdmacm's examples report their run.
func TestRdmaExchangeLoopback(t *testing.T) {
	port := fmt.Sprint(freePort(t))
	var sout, serr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runMain([]string{"rdma-server", "-a", "127.0.0.1", "-p", port}, &sout, &serr) }()
	code, cout, cerr := runDialing([]string{"rdma-client", "-s", "127.0.0.1", "-p", port})
	if code != 0 || !strings.Contains(cout, `received "iwarp-rdma-xchg!"`) || !strings.Contains(cout, "rdma-client: end 0") {
		t.Fatalf("client exit %d:\n%s%s", code, cout, cerr)
	}
	select {
	case c := <-done:
		if c != 0 || !strings.Contains(sout.String(), `received "iwarp-rdma-xchg!"`) || !strings.Contains(sout.String(), "rdma-server: end 0") {
			t.Fatalf("server exit %d:\n%s%s", c, sout.String(), serr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not finish")
	}
}
