package main

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestServeReclaim: serve gives memory back once per period in which
// connections ended, and not in a period in which none did.
func TestServeReclaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s server
		ctx, cancel := context.WithCancel(context.Background())
		freed := 0
		done := make(chan struct{})
		go func() { defer close(done); s.reclaim(ctx, reclaimEvery, func() { freed++ }) }()
		step := func(ended int, want int) {
			t.Helper()
			for range ended {
				s.ended.Add(1)
			}
			time.Sleep(reclaimEvery)
			synctest.Wait()
			if freed != want {
				t.Fatalf("freed %d times, want %d", freed, want)
			}
		}
		time.Sleep(reclaimEvery / 2) // each step below then spans one tick
		step(0, 0)                   // nothing ended yet
		step(3, 1)                   // three connections ended: one reclaim
		step(0, 1)                   // quiet: none
		step(1, 2)
		cancel()
		<-done
	})
}
