package verbs

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/testnet"
	"github.com/goiwarp/iwarp/rdma"
)

// The tests' harness: two verbs QPs joined by loopback TCP, each with its
// own device, STag table, one CQ for both queues, started without an MPA
// exchange (the framing and parameters are given directly).

// bound is how long a test waits for anything that should happen at once.
const bound = 10 * time.Second

const testPD = 1

// end is one side of a connection.
type end struct {
	dev   *Device
	table *mem.Table
	cq    *CQ
	qp    *QP
	conn  net.Conn
}

// opts shape an end and its connection.
type opts struct {
	noPoll     bool
	pipe       bool // an in-memory connection without a descriptor (pipePair)
	framing    fpdu.Options
	params     rdmap.Params
	sq, rq     int
	opTimeout  time.Duration
	drain      time.Duration
	srq        *SRQ
	cqCapacity int
	table      *mem.Table // nil: a table of the end's own
}

func defaultOpts() opts {
	return opts{framing: fpdu.Options{CRC: true}, params: rdmap.Params{IRD: 16, ORD: 16, RFC7306: true}, sq: 64, rq: 64}
}

// newEnd creates a device, a table, a CQ and an IDLE QP.
func newEnd(t testing.TB, o opts) *end {
	t.Helper()
	dev, err := NewDevice(DeviceConfig{NoPoll: o.noPoll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	e := &end{dev: dev, table: o.table}
	if e.table == nil {
		e.table = mem.NewTable(mem.TableOptions{})
	}
	capacity := o.cqCapacity
	if capacity == 0 {
		capacity = o.sq + o.rq
		if o.srq != nil {
			capacity = o.sq + o.srq.Depth()
		}
	}
	e.cq = NewCQ(capacity, nil)
	e.qp, err = New(dev, Config{Table: e.table, PD: testPD, SendCQ: e.cq, RecvCQ: e.cq, SRQ: o.srq,
		SQDepth: o.sq, RQDepth: o.rq, MaxSGE: 4, MaxInline: 64, OpTimeout: o.opTimeout, DrainTimeout: o.drain})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.qp.Close() })
	return e
}

// start starts e's QP over c.
func (e *end) start(t testing.TB, c net.Conn, o opts) {
	t.Helper()
	e.conn = c
	if err := e.qp.Start(c, Setup{Framing: o.framing, Params: o.params}); err != nil {
		t.Fatal(err)
	}
}

// pair returns two connected ends.
func pair(t testing.TB, oa, ob opts) (a, b *end) {
	t.Helper()
	a, b = newEnd(t, oa), newEnd(t, ob)
	var ca, cb net.Conn
	if oa.pipe {
		pa, pb := pipePair()
		t.Cleanup(func() { pa.Close(); pb.Close() })
		ca, cb = pa, pb
	} else {
		ca, cb = testnet.TCPPair(t)
	}
	a.start(t, ca, oa)
	b.start(t, cb, ob)
	return a, b
}

// defaultPair is pair with the default options on both sides.
func defaultPair(t testing.TB) (a, b *end) { return pair(t, defaultOpts(), defaultOpts()) }

// register registers buf with access acc.
func (e *end) register(t testing.TB, buf []byte, acc mem.Access) *mem.Region {
	t.Helper()
	r, err := e.table.Register(testPD, buf, acc, 0x1000)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// whole is the whole region as one SGE.
func whole(r *mem.Region) rdma.SGE { return rdma.SGE{STag: uint32(r.STag()), Length: uint32(r.Len())} }

// next waits for e's next completion.
func (e *end) next(t testing.TB) CQE {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var out [1]CQE
	for {
		if e.cq.Poll(out[:]) == 1 {
			return out[0]
		}
		if err := e.cq.Wait(ctx); err != nil {
			t.Fatalf("waiting for a completion: %v (state %v, error %v)", err, e.qp.State(), e.qp.Err())
		}
	}
}

// want waits for e's next completion and checks its ID and status.
func (e *end) want(t testing.TB, id uint64, st rdma.Status) CQE {
	t.Helper()
	c := e.next(t)
	if c.ID != id || c.Status != st {
		t.Fatalf("completion %+v, want id %d %v", c.Completion, id, st)
	}
	return c
}

// post posts wrs, failing the test if not all are posted.
func (e *end) post(t testing.TB, wrs ...rdmap.SendWR) {
	t.Helper()
	if n, err := e.qp.PostSend(wrs); err != nil || n != len(wrs) {
		t.Fatalf("PostSend: %d of %d posted: %v", n, len(wrs), err)
	}
}

// postRecv posts receives, failing the test if not all are posted.
func (e *end) postRecv(t testing.TB, wrs ...rdmap.RecvWR) {
	t.Helper()
	if n, err := e.qp.PostRecv(wrs); err != nil || n != len(wrs) {
		t.Fatalf("PostRecv: %d of %d posted: %v", n, len(wrs), err)
	}
}

// closeWithin closes e's QP, failing the test if Close does not return
// within bound.
func (e *end) closeWithin(t testing.TB) {
	t.Helper()
	if !returnsWithin(bound, func() { e.qp.Close() }) {
		t.Fatalf("Close has not returned after %v (state %v)", bound, e.qp.State())
	}
}

// returnsWithin runs f on its own goroutine and reports whether it
// returned within d.
func returnsWithin(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
