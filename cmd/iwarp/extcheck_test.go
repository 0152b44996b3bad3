package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestExtcheckAgainstPeerWithoutExtensions: against our rping server
// offering no extension, RFC 7306 calls are refused locally with nothing
// sent, and a Write to an unknown STag surfaces the server's Terminate
// DDP/1/0x00 with the Read behind it flushed.
func TestExtcheckAgainstPeerWithoutExtensions(t *testing.T) {
	for _, c := range []string{"no-ext", "unknown-stag"} {
		t.Run(c, func(t *testing.T) {
			port := freePort(t)
			ctx, cancel := context.WithCancel(context.Background())
			o := &rpingOpts{server: true, addr: "127.0.0.1", port: port, size: 64, persistent: true, dev: iwarp.NewDevice(nil)}
			o.conn.NoExtensions = true
			var sout, serr bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- rpingServer(ctx, o, &sout, &serr) }()
			defer func() { cancel(); <-done }()
			code, out, errb := runDialing([]string{"extcheck", "-a", fmt.Sprintf("127.0.0.1:%d", port), "-case", c, "-settle", "0"})
			if code != 0 || !strings.Contains(out, "extcheck "+c+": PASS") {
				t.Fatalf("exit %d\n%s%s", code, out, errb)
			}
		})
	}
}
