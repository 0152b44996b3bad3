// Package nvmetest is test support for the NVMe over Fabrics packages: an
// in-process nvmeof/target served on loopback for the length of a test.
package nvmetest

import (
	"context"
	"testing"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/nvmeof/target"
)

// Serve serves a target made from cfg on 127.0.0.1 (a free port) until the
// test ends, and returns it and its address. The cleanup stops Serve,
// closes the target and the listener, and waits for Serve to return.
func Serve(t testing.TB, cfg *target.Config) (*target.Target, string) {
	t.Helper()
	tg, err := target.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tg.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		tg.Close()
		ln.Close()
		<-done
	})
	return tg, ln.Addr().String()
}
