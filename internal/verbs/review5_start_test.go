//go:build linux && !iwarp_portable

package verbs

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/testnet"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// review5Blocked reports whether a goroutine whose stack holds every one
// of frames, and none of absent, is blocked with a wait reason starting
// with reason ("sync.Mutex.Lock", "IO wait", "select").
func review5Blocked(reason string, frames, absent []string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
next:
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, f := range frames {
			if !strings.Contains(g, f) {
				continue next
			}
		}
		for _, f := range absent {
			if strings.Contains(g, f) {
				continue next
			}
		}
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "["+reason) {
			return true
		}
	}
	return false
}

// TestReview5StartKeepsTheWaitersToken: a goroutine waiting on the QP's
// CQ while Start runs, between startReading's hp.Store (the Handle,
// registered disarmed, is published) and its rxRelease(true) (which arms
// it). Before 76e36f1 the waiter found the token free and took it, and
// rxRelease then stored token=false although Start had never held it: the
// waiter, parked on the socket, was no longer its only reader, and the
// next Ready took the token and read the socket (and the Core's receive
// buffers) while the runtime woke the waiter to read them too. Start now
// takes the token before it publishes the Handle. The test stops Start
// between the two with the Device's mutex (track takes it) and checks
// that while a waiter reads the socket the token is held.
func TestReview5StartKeepsTheWaitersToken(t *testing.T) {
	o := defaultOpts()
	e := newEnd(t, o)
	ca, cb := testnet.TCPPair(t)
	e.conn = ca
	p := newPeer(t, cb)
	d, q := e.dev, e.qp

	// Start stops in pollerFor (past its first q.mu section), then, with
	// q.mu held, before storing the Handle, then, with d.mu held, in
	// track: after hp.Store, before rxRelease.
	d.mu.Lock()
	locked, qLocked := true, false
	t.Cleanup(func() { // before the QP's Close, which takes both
		if qLocked {
			q.mu.Unlock()
		}
		if locked {
			d.mu.Unlock()
		}
	})
	started := make(chan error, 1)
	go func() { started <- q.Start(ca, Setup{Framing: o.framing, Params: o.params}) }()
	eventually(t, "Start waiting in pollerFor", func() bool {
		return review5Blocked("sync.Mutex.Lock", []string{"(*Device).pollerFor(", "(*QP).Start("}, nil)
	})
	q.mu.Lock()
	qLocked = true
	d.mu.Unlock()
	locked = false
	eventually(t, "Start waiting to store the Handle", func() bool {
		return review5Blocked("sync.Mutex.Lock", []string{"(*QP).startReading(", "(*QP).Start("},
			[]string{"pollerFor", "Register"})
	})
	d.mu.Lock()
	locked = true
	q.mu.Unlock()
	qLocked = false
	eventually(t, "Start waiting in track", func() bool {
		return review5Blocked("sync.Mutex.Lock", []string{"(*Device).track(", "(*QP).Start("}, nil)
	})
	if q.hp.Load() == nil {
		t.Fatal("Start is in track without having stored the Handle")
	}

	// A waiter on the CQ now finds the Handle and, the token free, reads
	// the socket itself and parks (with the token taken it would wait as
	// usual).
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() { waited <- e.cq.Wait(ctx) }()
	defer cancel()
	eventually(t, "the waiter parked", func() bool {
		return review5Blocked("IO wait", []string{"(*QP).waitReading(", "(*CQ).Wait("}, nil) ||
			review5Blocked("select", []string{"(*CQ).Wait("}, nil)
	})
	locked = false
	d.mu.Unlock()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if q.readerWaiting.Load() && !q.rxTok.Load() {
		t.Error("a waiter is parked reading the socket and the receive token is free: " +
			"Start's rxRelease gave back a token it did not hold, and the next Ready reads the socket too")
	}
	// The peer's Send ends the wait, whoever reads it.
	e.postRecv(t, rdmap.RecvWR{ID: 1})
	p.sendMsg(wire.OpSend, 0, nil)
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(bound):
		t.Fatalf("the wait begun during Start never saw the peer's Send (state %v, %v)", q.State(), q.Err())
	}
	e.want(t, 1, rdma.StatusSuccess)
}
