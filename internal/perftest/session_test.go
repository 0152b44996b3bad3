package perftest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestClientServe runs our client against our server in one process for
// every test that does not poll memory the peer writes (those run through
// "iwarp perf -perftest" without the race detector, in cmd/iwarp): both
// sides must finish and say what they verified.
func TestClientServe(t *testing.T) {
	for _, cfg := range []Config{
		{Op: Write, Size: 4000, Iters: 300, TxDepth: 16},
		{Op: Read, Size: 4000, Iters: 300, TxDepth: 16},
		{Op: Send, Size: 4000, Iters: 300, TxDepth: 16},
		{Op: Send, Lat: true, Size: 8, Iters: 300},
		{Op: Read, Lat: true, Size: 8, Iters: 300},
	} {
		t.Run(cfg.Name(), func(t *testing.T) {
			if cfg.PollsPeerMemory() {
				t.Fatal("this test must not poll peer memory")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var srvOut, cliOut bytes.Buffer
			srvErr := make(chan error, 1)
			go func() { srvErr <- Serve(ctx, &cfg, ln, &srvOut) }()
			cerr := Client(ctx, &cfg, ln.Addr().String(), &cliOut)
			serr := <-srvErr
			if cerr != nil || serr != nil {
				t.Fatalf("client: %v\n%s\nserver: %v\n%s", cerr, &cliOut, serr, &srvOut)
			}
			for side, out := range map[string]string{"client": cliOut.String(), "server": srvOut.String()} {
				if !strings.Contains(out, cfg.Name()+" (perftest protocol, peer version 6.06), "+side) || !strings.HasSuffix(out, cfg.Name()+": done\n") {
					t.Errorf("%s printed:\n%s", side, out)
				}
			}
			if !strings.Contains(cliOut.String()+srvOut.String(), "verified: ") {
				t.Errorf("no side verified anything:\n%s\n%s", &cliOut, &srvOut)
			}
		})
	}
}

func TestConfigDefaultsAndChecks(t *testing.T) {
	bw := Config{Op: Write}
	bw.SetDefaults()
	lat := Config{Op: Send, Lat: true, Size: 64}
	lat.SetDefaults()
	if bw.Size != 65536 || bw.Iters != 5000 || bw.TxDepth != 128 || bw.Timeout < 2*time.Minute || bw.Name() != "ib_write_bw" {
		t.Errorf("bandwidth defaults %+v", bw)
	}
	if lat.Size != 64 || lat.Iters != 1000 || lat.Name() != "ib_send_lat" {
		t.Errorf("latency defaults %+v", lat)
	}
	for _, bad := range []Config{{Op: 9, Size: 1, Iters: 1, TxDepth: 1, Timeout: 1}, {Op: Read, Size: MaxSize + 1, Iters: 1, TxDepth: 1, Timeout: 1}, {Op: Read, Size: 1, Iters: -1, TxDepth: 1, Timeout: 1}} {
		if err := bad.check(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := Client(context.Background(), &Config{Op: Read, Size: -1}, "127.0.0.1:1", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "size -1") {
		t.Errorf("a negative size: %v", err)
	}
	for _, c := range []struct {
		cfg  Config
		poll bool
	}{{Config{Op: Write, Lat: true}, true}, {Config{Op: Send, Iters: rxDepth + 1}, true}, {Config{Op: Send, Iters: rxDepth}, false}, {Config{Op: Write, Iters: 1e6}, false}} {
		if got := c.cfg.PollsPeerMemory(); got != c.poll {
			t.Errorf("%s -n %d: polls %v", c.cfg.Name(), c.cfg.Iters, got)
		}
	}
	for _, s := range []string{"write", "send", "read"} {
		if o, err := ParseOp(s); err != nil || o.String() != s {
			t.Errorf("ParseOp(%q) = %v, %v", s, o, err)
		}
	}
	if _, err := ParseOp("atomic"); err == nil {
		t.Error("ParseOp accepted atomic")
	}
}
