package main

import (
	"context"
	"time"

	"github.com/goiwarp/iwarp"
)

// reclaimEvery is how often iwarp serve looks whether connections ended
// and, if so, gives the free memory back to the system (reclaim).
const reclaimEvery = 5 * time.Second

// reclaim calls free (debug.FreeOSMemory: a garbage collection, then the
// free memory returned to the system) at the end of every period in which
// a connection ended, until ctx ends. Without it a flood of
// connections leaves the process at several times its resident size for
// minutes: the runtime collects garbage only as the program allocates
// (or every 2 minutes), and only collected memory can go back
// (docs/security.md, "Memory after a flood").
func (s *server) reclaim(ctx context.Context, every time.Duration, free func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	seen := s.ended.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n := s.ended.Load(); n != seen {
			seen = n
			free()
		}
	}
}

// drainEvents reads dev's asynchronous events, which serve does not use
// (it reports each connection itself), until ctx ends: unread, the first
// 256 would stay in the channel for good, and each holds its torn-down QP
// with all that QP references (about 7 MiB in all).
func drainEvents(ctx context.Context, dev *iwarp.Device) {
	ev := dev.Events()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ev:
		}
	}
}
