//go:build linux && !iwarp_portable

package verbs

import (
	"context"
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// Tests of the reading waiter (waitread_linux.go): a goroutine waiting on
// a CQ or a Waiter reads its QP's socket itself, and anything else that
// hands it what it waits for, or the end of its context, ends the park.

// waitingReader starts e.cq.Wait(ctx) on a goroutine of its own and
// returns once that goroutine reads the socket itself, with the channel
// its error comes on.
func waitingReader(t *testing.T, e *end, ctx context.Context) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- e.cq.Wait(ctx) }()
	deadline := time.Now().Add(bound)
	for !e.qp.readerWaiting.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the CQ's waiter never read the socket itself")
		}
		runtime.Gosched()
	}
	return errc
}

// TestWaitReadingInterruptedByTransmit: the completion of a Write, added
// by the goroutine that posted it, ends the park of a goroutine reading
// the socket for the same CQ.
func TestWaitReadingInterruptedByTransmit(t *testing.T) {
	a, b := defaultPair(t)
	dst := b.register(t, make([]byte, 64), mem.AccessRemoteWrite)
	src := a.register(t, make([]byte, 64), 0)
	errc := waitingReader(t, a, context.Background())
	a.post(t, remote(rdmap.SendWR{ID: 9, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(src)}}, dst, 0))
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(bound):
		t.Fatal("the reading waiter was not woken by the Write's completion")
	}
	a.want(t, 9, rdma.StatusSuccess)
}

// TestWaitReadingContextEnds: the end of the context ends the park, and
// the QP reads on afterwards without a waiter: the interrupt's read
// deadline does not outlive the wait (the poller's reads would fail).
func TestWaitReadingContextEnds(t *testing.T) {
	a, b := defaultPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := waitingReader(t, a, ctx)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait returned %v, want context.Canceled", err)
		}
	case <-time.After(bound):
		t.Fatal("the reading waiter did not end with its context")
	}
	// No one waits at a now: b's Read is answered by a's poller.
	word := a.register(t, make([]byte, 8), mem.AccessRemoteRead)
	sink := b.register(t, make([]byte, 8), mem.AccessLocalWrite)
	wctx, wcancel := context.WithTimeout(context.Background(), bound)
	defer wcancel()
	c, err := b.qp.Do(wctx, remote(rdmap.SendWR{Op: rdma.OpRead, SGL: []rdma.SGE{whole(sink)}}, word, 0))
	if err != nil || c.Status != rdma.StatusSuccess {
		t.Fatalf("Read after the waiter left: %v %v (a: %v %v)", c.Status, err, a.qp.State(), a.qp.Err())
	}
}

// TestWaitReadingEndedContextReused: a context that ended before the wait
// (its registration kept from an earlier wait) ends the next wait at once.
func TestWaitReadingEndedContextReused(t *testing.T) {
	a, _ := defaultPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := waitingReader(t, a, ctx)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("first Wait: %v", err)
	}
	if !returnsWithin(bound, func() {
		if err := a.cq.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("second Wait: %v", err)
		}
	}) {
		t.Fatal("a Wait with an ended context parked")
	}
}

// TestWaitReadingResponse: a blocking Read's response is read by the
// goroutine waiting for it, and the data is placed.
func TestWaitReadingResponse(t *testing.T) {
	a, b := defaultPair(t)
	src := make([]byte, 256<<10)
	for i := range src {
		src[i] = byte(i * 7)
	}
	from := b.register(t, src, mem.AccessRemoteRead)
	sinkBuf := make([]byte, len(src))
	sink := a.register(t, sinkBuf, mem.AccessLocalWrite)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for range 20 {
		clear(sinkBuf)
		c, err := a.qp.Do(ctx, remote(rdmap.SendWR{Op: rdma.OpRead, SGL: []rdma.SGE{whole(sink)}}, from, 0))
		if err != nil || c.Status != rdma.StatusSuccess {
			t.Fatalf("Read: %v %v", c.Status, err)
		}
		for i := range sinkBuf {
			if sinkBuf[i] != src[i] {
				t.Fatalf("octet %d: %#x, want %#x", i, sinkBuf[i], src[i])
			}
		}
	}
}

// TestWaitReadingSharedCQ: a CQ fed by two QPs is waited on without
// reading either socket, and a completion of either wakes the waiter.
func TestWaitReadingSharedCQ(t *testing.T) {
	dev, err := NewDevice(DeviceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	cq := NewCQ(256, nil)
	table := mem.NewTable(mem.TableOptions{})
	var qps [2]*QP
	for i := range qps {
		qps[i], err = New(dev, Config{Table: table, PD: testPD, SendCQ: cq, RecvCQ: cq, SQDepth: 8, RQDepth: 8, MaxSGE: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { qps[i].Close() })
	}
	if q := cq.sole(); q != nil {
		t.Fatal("a CQ of two QPs has a sole QP")
	}
	qps[1].Close()
	if q := cq.sole(); q != qps[0] {
		t.Fatalf("after one QP closed: sole %p, want %p", q, qps[0])
	}
}

// TestWaitReadingArmsOnlyWhenParked: a waiter that finds its completion
// readable at once leaves the poller's registration as it found it (no
// epoll_ctl); it disarms the socket only when it is about to park, and
// then arms it again as it leaves. The test disarms a's socket itself, so
// that the Read Response waits in the socket for the waiter rather than
// being read by the poller.
func TestWaitReadingArmsOnlyWhenParked(t *testing.T) {
	a, b := defaultPair(t)
	word := b.register(t, make([]byte, 8), mem.AccessRemoteRead)
	sink := a.register(t, make([]byte, 8), mem.AccessLocalWrite)
	h := a.qp.hp.Load()
	if err := h.Disarm(); err != nil {
		t.Fatal(err)
	}
	a.post(t, remote(rdmap.SendWR{ID: 5, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(sink)}}, word, 0))
	deadline := time.Now().Add(bound)
	for socketQueued(t, a) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the Read Response never reached a's socket")
		}
		runtime.Gosched()
	}
	before := h.Ctls()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := a.cq.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := h.Ctls() - before; n != 0 {
		t.Errorf("a wait that found its completion readable made %d epoll_ctl calls, want 0", n)
	}
	a.want(t, 5, rdma.StatusSuccess)
	if !a.qp.rxTok.CompareAndSwap(false, true) {
		t.Fatal("the waiter kept the receive token")
	}
	a.qp.rxRelease(true) // the test's Disarm spent the arm: arm as a holder would

	// A waiter that parks disarms first and arms again as it leaves: two
	// calls.
	a.postRecv(t, rdmap.RecvWR{ID: 7})
	before = h.Ctls()
	errc := make(chan error, 1)
	go func() { errc <- a.cq.Wait(ctx) }()
	for h.Ctls() == before {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never disarmed the socket to park")
		}
		runtime.Gosched()
	}
	b.post(t, rdmap.SendWR{ID: 6, Op: rdma.OpSend, Flags: rdma.Signaled})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := h.Ctls() - before; n != 2 {
		t.Errorf("a wait that parked made %d epoll_ctl calls, want 2 (disarm, arm)", n)
	}
	a.want(t, 7, rdma.StatusSuccess)
}

// socketQueued returns the octets waiting in e's socket (FIONREAD).
func socketQueued(t *testing.T, e *end) int {
	t.Helper()
	var n int
	var errno syscall.Errno
	if err := e.qp.rc.Control(func(fd uintptr) {
		var v int32
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&v)))
		n = int(v)
	}); err != nil {
		t.Fatal(err)
	}
	if errno != 0 {
		t.Fatal(errno)
	}
	return n
}
