package verbs

import (
	"bytes"
	"context"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/testnet"
	"github.com/goiwarp/iwarp/rdma"
)

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// newEndOn is newEnd on a Device of the test's.
func newEndOn(t *testing.T, dev *Device, o opts) *end {
	t.Helper()
	e := &end{dev: dev, table: mem.NewTable(mem.TableOptions{}), cq: NewCQ(o.sq+o.rq, nil)}
	var err error
	e.qp, err = New(dev, Config{Table: e.table, PD: testPD, SendCQ: e.cq, RecvCQ: e.cq, SQDepth: o.sq, RQDepth: o.rq, MaxSGE: 4, MaxInline: 64})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestReview2ManyQPsOneDeviceTeardown: 32 connected QP pairs share one
// Device per side; each moves a Send, then every QP is closed at once,
// concurrently with both Devices' Close. Everything returns within the
// bound and no descriptor (sockets, epoll sets) and no goroutine of the
// shell is left. In every mode.
func TestReview2ManyQPsOneDeviceTeardown(t *testing.T) {
	const qps = 32
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			before := openFDs(t)
			o := modeOpts(m.noPoll, m.pipe)
			o.sq, o.rq = 8, 8
			da, err := NewDevice(DeviceConfig{NoPoll: m.noPoll})
			if err != nil {
				t.Fatal(err)
			}
			db, err := NewDevice(DeviceConfig{NoPoll: m.noPoll})
			if err != nil {
				t.Fatal(err)
			}
			var ends []*end
			var conns []net.Conn
			for range qps {
				a, b := newEndOn(t, da, o), newEndOn(t, db, o)
				var ca, cb net.Conn
				if m.pipe {
					ca, cb = pipePair()
				} else {
					ca, cb = testnet.TCPPair(t)
				}
				conns = append(conns, ca, cb)
				a.start(t, ca, o)
				b.start(t, cb, o)
				postRecv64(t, b, 1)
				a.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(a.register(t, []byte("x"), 0))}})
				ends = append(ends, a, b)
			}
			for _, e := range ends {
				e.want(t, 1, rdma.StatusSuccess)
			}
			var wg sync.WaitGroup
			for _, e := range ends {
				wg.Go(func() { e.qp.Close() })
			}
			wg.Go(func() { da.Close() })
			wg.Go(func() { db.Close() })
			if !returnsWithin(bound, wg.Wait) {
				t.Fatalf("closing %d QPs and their Devices at once has not returned after %v", 2*qps, bound)
			}
			for _, c := range conns {
				c.Close() // closed already by the QPs: nothing to release
			}
			noLeaks(t)
			if after := openFDs(t); after > before {
				t.Errorf("%d descriptors open after every QP and Device was closed, %d before", after, before)
			}
		})
	}
}

// TestReview2ManyBusyQPsOneDevice: 16 QP pairs on one Device per side,
// each Writing 4 MiB and Reading it back at once (every socket busy past
// the poller's budget, so the workers take them over): every operation
// completes, with the right data, within the bound.
func TestReview2ManyBusyQPsOneDevice(t *testing.T) {
	const (
		qps  = 16
		size = 4 << 20
	)
	o := defaultOpts()
	o.sq, o.rq = 8, 8
	da, err := NewDevice(DeviceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer da.Close()
	db, err := NewDevice(DeviceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i * 13)
	}
	limit := bound
	if raceEnabled {
		// 16 × 8 MiB under the race detector on two cores takes ~13 s
		// through the portable blocking writes: slow, not stuck.
		limit = 6 * bound
	}
	var wg sync.WaitGroup
	for range qps {
		a, b := newEndOn(t, da, o), newEndOn(t, db, o)
		ca, cb := testnet.TCPPair(t)
		a.start(t, ca, o)
		b.start(t, cb, o)
		t.Cleanup(func() { a.qp.Close(); b.qp.Close() })
		sr := a.register(t, src, 0)
		dr := b.register(t, make([]byte, size), mem.AccessRemoteWrite|mem.AccessRemoteRead)
		sink := make([]byte, size)
		sk := a.register(t, sink, mem.AccessLocalWrite)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			if c, err := a.qp.Do(ctx, remote(rdmap.SendWR{Op: rdma.OpWrite, SGL: []rdma.SGE{whole(sr)}}, dr, 0)); err != nil || c.Status != rdma.StatusSuccess {
				t.Errorf("Write: %+v, %v", c, err)
				return
			}
			if c, err := a.qp.Do(ctx, remote(rdmap.SendWR{Op: rdma.OpRead, SGL: []rdma.SGE{whole(sk)}}, dr, 0)); err != nil || c.Status != rdma.StatusSuccess {
				t.Errorf("Read: %+v, %v", c, err)
				return
			}
			if !bytes.Equal(sink, src) {
				t.Error("the Read returned other data than the Write wrote")
			}
		})
	}
	wg.Wait()
}
