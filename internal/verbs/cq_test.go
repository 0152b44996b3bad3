package verbs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// Completion queues: capacity by reservation, slots freed by polling,
// notification, waiting.

// TestCQCapacity: a QP whose queues do not fit its CQs is refused; Close
// gives its reservation back.
func TestCQCapacity(t *testing.T) {
	dev, err := NewDevice(DeviceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	cq := NewCQ(100, nil)
	cfg := Config{Table: mem.NewTable(mem.TableOptions{}), SendCQ: cq, RecvCQ: cq, SQDepth: 30, RQDepth: 30, MaxSGE: 1}
	q1, err := New(dev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(dev, cfg); !errors.Is(err, ErrCQFull) {
		t.Fatalf("a second QP of 60 entries on a CQ of 100: %v, want %v", err, ErrCQFull)
	}
	q1.Close()
	q2, err := New(dev, cfg)
	if err != nil {
		t.Fatalf("after Close gave the reservation back: %v", err)
	}
	q2.Close()
}

// TestCQSlots: a send WR's slot is freed only when its completion is
// polled; the last free slot takes only a signaled WR.
func TestCQSlots(t *testing.T) {
	o := defaultOpts()
	o.sq = 4
	a, b := pair(t, o, o)
	dst := b.register(t, make([]byte, 8), mem.AccessRemoteWrite)
	src := a.register(t, make([]byte, 8), 0)
	w := func(id uint64, f rdmap.Flags) rdmap.SendWR {
		return remote(rdmap.SendWR{ID: id, Op: rdmap.OpWrite, Flags: f, SGL: []rdmap.SGE{whole(src)}}, dst, 0)
	}
	a.post(t, w(1, 0), w(2, 0), w(3, 0))
	if _, err := a.qp.PostSend([]rdmap.SendWR{w(4, 0)}); !errors.Is(err, rdmap.ErrSQNeedsSignaled) {
		t.Fatalf("an unsignaled WR in the last slot: %v, want %v", err, rdmap.ErrSQNeedsSignaled)
	}
	a.post(t, w(4, rdmap.Signaled))
	if _, err := a.qp.PostSend([]rdmap.SendWR{w(5, rdmap.Signaled)}); !errors.Is(err, rdmap.ErrSQFull) {
		t.Fatalf("a fifth WR on a send queue of 4: %v, want %v", err, rdmap.ErrSQFull)
	}
	// Completed but not polled: still full.
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := a.cq.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]rdmap.SendWR{w(5, rdmap.Signaled)}); !errors.Is(err, rdmap.ErrSQFull) {
		t.Fatalf("with the completion not polled: %v, want %v", err, rdmap.ErrSQFull)
	}
	a.want(t, 4, rdma.StatusSuccess) // frees all four slots
	a.post(t, w(5, rdmap.Signaled), w(6, rdmap.Signaled), w(7, rdmap.Signaled), w(8, rdmap.Signaled))
	for id := uint64(5); id <= 8; id++ {
		a.want(t, id, rdma.StatusSuccess)
	}
}

// TestCQArm: an armed CQ notifies its event channel once, for the next
// completion (or only a solicited or failed one); completions already
// queued do not fire it. The notification is sent right after the batch
// of completions that fired it is added (after the QP's lock is
// released): a later completion on the same path proves it was sent.
func TestCQArm(t *testing.T) {
	ch := NewEventChannel(4)
	o := defaultOpts()
	a, b := pair(t, o, o)
	b.cq.channel = ch // the test's CQ, before any completion
	for i := uint64(0); i < 7; i++ {
		b.postRecv(t, rdmap.RecvWR{ID: i})
	}
	next := uint64(0)
	send := func(op rdmap.Op) {
		t.Helper()
		if c, err := a.qp.Do(context.Background(), rdmap.SendWR{Op: op}); err != nil || c.Status != rdma.StatusSuccess {
			t.Fatalf("%v: %+v, %v", op, c, err)
		}
		b.want(t, next, rdma.StatusSuccess)
		next++
	}
	notifications := func() int {
		n := 0
		for {
			select {
			case cq := <-ch.C:
				if cq != b.cq {
					t.Fatal("a notification for another CQ")
				}
				n++
			default:
				return n
			}
		}
	}
	send(rdmap.OpSend) // queued before the Arm
	b.cq.Arm(true)
	send(rdmap.OpSend) // not solicited
	send(rdmap.OpSend) // and proof that the one before was handled
	if n := notifications(); n != 0 {
		t.Fatalf("a solicited-only arm fired %d times for unsolicited completions", n)
	}
	send(rdmap.OpSendSE)
	send(rdmap.OpSend)
	if n := notifications(); n != 1 {
		t.Fatalf("a solicited-only arm fired %d times for one solicited completion, want once", n)
	}
	b.cq.Arm(false)
	send(rdmap.OpSend)
	send(rdmap.OpSend)
	if n := notifications(); n != 1 {
		t.Fatalf("an armed CQ notified %d times for two completions, want once", n)
	}
}

// TestCQWait: Wait ends with its context, and Close wakes every waiter.
func TestCQWait(t *testing.T) {
	cq := NewCQ(4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := cq.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v, want the context's error", err)
	}
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- cq.Wait(context.Background()) }()
	}
	cq.Close()
	for range 3 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrCQClosed) {
				t.Fatalf("Wait on a closed CQ: %v", err)
			}
		case <-time.After(bound):
			t.Fatal("a waiter was not woken by Close")
		}
	}
}
