package engine

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
)

// The engine review's defects that cannot be shown at the public API: the
// API serialises the PostRecv calls of a QP and gives no hold on the
// window below. The others are regression tests in the root package
// (defects_test.go, defects_rebuild_test.go; docs/engine-rebuild.md has
// the table).

// TestDefect08PostRecvDuringTeardown: defect 8, a receive posted while the
// QP is torn down was never completed. PostRecv checked the QP's state,
// released the lock and only then queued the work request; a teardown
// whose flush ran in between left it in a queue nobody would flush again,
// although PostRecv had returned nil. Every receive PostRecv accepts must
// have completed (flushed) once Close has returned.
//
// The test holds the receive queue's lock so that a PostRecv that passed
// its state check waits for it, then lets go and closes the QP at once,
// before the waiting poster runs again.
func TestDefect08PostRecvDuringTeardown(t *testing.T) {
	const rounds = 20
	table := mem.NewTable(mem.TableOptions{})
	lost := 0
	for round := 0; round < rounds; round++ {
		scq, rcq := NewCQ(4, nil), NewCQ(4, nil)
		qp, err := New(Config{Table: table, PD: 1, SendCQ: scq, RecvCQ: rcq, SQDepth: 1, RQDepth: 4, MaxSGE: 1})
		if err != nil {
			t.Fatal(err)
		}
		qp.rq.mu.Lock()
		posted := make(chan error, 1)
		go func() {
			_, err := qp.PostRecv([]RecvWR{{ID: 42}})
			posted <- err
		}()
		waitForStack(t, "(*recvQueue).post(") // past the state check, waiting for the lock
		qp.rq.mu.Unlock()
		if err := qp.Close(); err != nil {
			t.Fatal(err)
		}
		err = <-posted
		var out [4]CQE
		n := rcq.Poll(out[:])
		if err == nil && (n != 1 || out[0].ID != 42 || out[0].Status != StatusFlushed) {
			lost++
			t.Logf("round %d: PostRecv returned nil, %d completions after Close: %+v", round, n, out[:n])
		}
		if err != nil && n != 0 {
			t.Fatalf("round %d: PostRecv failed (%v) but %d receives completed", round, err, n)
		}
	}
	if lost > 0 {
		t.Errorf("a receive accepted by PostRecv never completed in %d of %d rounds", lost, rounds)
	}
}

// waitForStack waits until some goroutine's stack contains frame.
func waitForStack(t *testing.T, frame string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	buf := make([]byte, 1<<20)
	for ctx.Err() == nil {
		if strings.Contains(string(buf[:runtime.Stack(buf, true)]), frame) {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("no goroutine reached %s", frame)
}
