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
	w := func(id uint64, f rdma.SendFlags) rdmap.SendWR {
		return remote(rdmap.SendWR{ID: id, Op: rdma.OpWrite, Flags: f, SGL: []rdma.SGE{whole(src)}}, dst, 0)
	}
	a.post(t, w(1, 0), w(2, 0), w(3, 0))
	if _, err := a.qp.PostSend([]rdmap.SendWR{w(4, 0)}); !errors.Is(err, rdmap.ErrSQNeedsSignaled) {
		t.Fatalf("an unsignaled WR in the last slot: %v, want %v", err, rdmap.ErrSQNeedsSignaled)
	}
	a.post(t, w(4, rdma.Signaled))
	if _, err := a.qp.PostSend([]rdmap.SendWR{w(5, rdma.Signaled)}); !errors.Is(err, rdmap.ErrSQFull) {
		t.Fatalf("a fifth WR on a send queue of 4: %v, want %v", err, rdmap.ErrSQFull)
	}
	// Completed but not polled: still full.
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := a.cq.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]rdmap.SendWR{w(5, rdma.Signaled)}); !errors.Is(err, rdmap.ErrSQFull) {
		t.Fatalf("with the completion not polled: %v, want %v", err, rdmap.ErrSQFull)
	}
	a.want(t, 4, rdma.StatusSuccess) // frees all four slots
	a.post(t, w(5, rdma.Signaled), w(6, rdma.Signaled), w(7, rdma.Signaled), w(8, rdma.Signaled))
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
	send := func(op rdma.Opcode, f rdma.SendFlags) {
		t.Helper()
		if c, err := a.qp.Do(context.Background(), rdmap.SendWR{Op: op, Flags: f}); err != nil || c.Status != rdma.StatusSuccess {
			t.Fatalf("%v (flags %#x): %+v, %v", op, f, c, err)
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
	send(rdma.OpSend, 0) // queued before the Arm
	b.cq.Arm(true)
	send(rdma.OpSend, 0) // not solicited
	send(rdma.OpSend, 0) // and proof that the one before was handled
	if n := notifications(); n != 0 {
		t.Fatalf("a solicited-only arm fired %d times for unsolicited completions", n)
	}
	send(rdma.OpSend, rdma.Solicited)
	send(rdma.OpSend, 0)
	if n := notifications(); n != 1 {
		t.Fatalf("a solicited-only arm fired %d times for one solicited completion, want once", n)
	}
	b.cq.Arm(false)
	send(rdma.OpSend, 0)
	send(rdma.OpSend, 0)
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

// TestQPNum: a Device numbers its QPs from 1, and every completion names
// the QP of its work request: a send's and a receive's, a receive flushed
// by a started QP's Core and one flushed by a QP that never started.
func TestQPNum(t *testing.T) {
	a, b := defaultPair(t)
	if a.qp.Num() != 1 || b.qp.Num() != 1 {
		t.Fatalf("the first QPs of their Devices are numbered %d and %d, want 1", a.qp.Num(), b.qp.Num())
	}
	cq := NewCQ(8, nil)
	idle, err := New(a.dev, Config{Table: a.table, PD: testPD, SendCQ: cq, RecvCQ: cq, SQDepth: 4, RQDepth: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	if idle.Num() != 2 {
		t.Fatalf("the second QP of a Device is numbered %d, want 2", idle.Num())
	}
	b.postRecv(t, rdmap.RecvWR{ID: 1}, rdmap.RecvWR{ID: 2})
	a.post(t, rdmap.SendWR{ID: 3, Op: rdma.OpSend, Flags: rdma.Signaled})
	if c := a.want(t, 3, rdma.StatusSuccess); c.QPNum != a.qp.Num() {
		t.Errorf("send completion %+v, want QPNum %d", c.Completion, a.qp.Num())
	}
	if c := b.want(t, 1, rdma.StatusSuccess); c.QPNum != b.qp.Num() {
		t.Errorf("receive completion %+v, want QPNum %d", c.Completion, b.qp.Num())
	}
	b.closeWithin(t)
	if c := b.want(t, 2, rdma.StatusFlushed); c.QPNum != b.qp.Num() {
		t.Errorf("flushed receive %+v, want QPNum %d", c.Completion, b.qp.Num())
	}
	if n, err := idle.PostRecv([]rdmap.RecvWR{{ID: 4}}); err != nil || n != 1 {
		t.Fatalf("PostRecv on an idle QP: %d posted, %v", n, err)
	}
	if !returnsWithin(bound, func() { idle.Close() }) {
		t.Fatalf("Close of an idle QP has not returned after %v", bound)
	}
	var out [2]CQE
	if n := cq.Poll(out[:]); n != 1 || out[0].ID != 4 || out[0].Status != rdma.StatusFlushed || out[0].QPNum != idle.Num() {
		t.Fatalf("%d completions after the idle QP's Close, first %+v: want receive 4 flushed with QPNum %d", n, out[0].Completion, idle.Num())
	}
}
