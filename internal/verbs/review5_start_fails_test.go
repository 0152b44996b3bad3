//go:build linux && !iwarp_portable

package verbs

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/testnet"
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

// TestReview5FailsStartFreesTheWaitersToken: a goroutine waiting on the
// QP's CQ while Start runs takes the receive token between startReading's
// hp.Store (the Handle, registered disarmed, is published) and its
// rxRelease(true) (which arms it): waitReading only needs hp non-nil and
// the token free. rxRelease then stores token=false although Start never
// held the token: the waiter, parked on the socket, is no longer its only
// reader, and the next Ready takes the token and reads the socket (and
// the Core's receive buffers) while the runtime wakes the waiter to read
// them too. The test stops Start between the two with the Device's mutex
// (track takes it) and checks that while a waiter reads the socket the
// token is held.
//
// Fix: startReading takes the token before it publishes the Handle
// (q.rxTok.Store(true) under q.mu, before q.hp.Store), so that its
// rxRelease(true) gives back a token it holds; a waiter arriving in
// between finds it taken and waits as usual.
func TestReview5FailsStartFreesTheWaitersToken(t *testing.T) {
	o := defaultOpts()
	e := newEnd(t, o)
	ca, _ := testnet.TCPPair(t)
	e.conn = ca
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
	t.Cleanup(func() {
		cancel()
		<-waited
	})
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
}
