package verbs

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The shell's timers, under testing/synctest: the QPs run over in-memory
// connections (no poller: a receive goroutine each) in a bubble whose
// clock advances only when every goroutine waits, so each test says to the
// tick when the operation timeout or the drain ends.

const (
	opTimeout = time.Second
	tick      = opTimeout / 4 // the operation timeout's period
)

// timedOpts are the options of the timers' tests.
func timedOpts() opts {
	o := defaultOpts()
	o.noPoll, o.opTimeout = true, opTimeout
	return o
}

// settle lets the bubble advance by d and waits until every goroutine in
// it waits again.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// TestOpTimeoutUnansweredRead: a Read the peer never answers fails the QP
// with ErrPeerStalled once Progress has not moved for the operation
// timeout: not before, and at most one period after.
func TestOpTimeoutUnansweredRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, p := scriptedPipe(t, timedOpts())
		sink := e.register(t, make([]byte, 64), mem.AccessLocalWrite)
		e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(sink)}, Remote: rdma.RemoteBuffer{STag: 0x5500}})
		p.nextOf(wire.OpReadRequest) // and never answers
		go p.drainAll()
		settle(opTimeout - time.Millisecond)
		if s := e.qp.State(); s != rdma.StateRTS {
			t.Fatalf("state %v %v after the request, before the operation timeout", s, opTimeout-time.Millisecond)
		}
		settle(time.Millisecond + tick)
		if err := e.qp.Err(); !errors.Is(err, ErrPeerStalled) {
			t.Fatalf("error %v one period after the operation timeout, want %v", err, ErrPeerStalled)
		}
		c := e.want(t, 1, rdma.StatusFlushed)
		if !errors.Is(c.Err, ErrPeerStalled) {
			t.Errorf("the Read's error %v, want %v", c.Err, ErrPeerStalled)
		}
	})
}

// TestOpTimeoutProgress: a peer that answers slowly, each part within the
// timeout, never fails the QP; when it stops, the timeout counts from its
// last octet.
func TestOpTimeoutProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const parts = 8
		e, p := scriptedPipe(t, timedOpts())
		sink := e.register(t, make([]byte, parts*16), mem.AccessLocalWrite)
		e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(sink)}, Remote: rdma.RemoteBuffer{STag: 0x5500}})
		rr := p.nextOf(wire.OpReadRequest).ReadRequest
		go p.drainAll()
		// Every part but the last, 0.9 timeouts apart: 7.2 timeouts in all.
		for i := 0; i < parts-1; i++ {
			settle(opTimeout * 9 / 10)
			h := wire.DDPHeader{Tagged: true, Version: wire.DDPVersion, Control: wire.MakeRDMAPControl(wire.RDMAPVersion1, wire.OpReadResponse),
				STag: rr.SinkSTag, TO: rr.SinkTO + uint64(i*16)}
			p.send(append(wire.AppendDDPHeader(nil, &h), make([]byte, 16)...))
			synctest.Wait()
			if s := e.qp.State(); s != rdma.StateRTS {
				t.Fatalf("state %v after part %d of a Response arriving within the timeout each (%v)", s, i, e.qp.Err())
			}
		}
		settle(opTimeout + tick)
		if err := e.qp.Err(); !errors.Is(err, ErrPeerStalled) {
			t.Fatalf("error %v once the peer stopped for the timeout, want %v", err, ErrPeerStalled)
		}
	})
}

// TestOpTimeoutOff: with no operation timeout a QP waits for its peer for
// as long as it takes.
func TestOpTimeoutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := timedOpts()
		o.opTimeout = 0
		e, p := scriptedPipe(t, o)
		sink := e.register(t, make([]byte, 64), mem.AccessLocalWrite)
		e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(sink)}, Remote: rdma.RemoteBuffer{STag: 0x5500}})
		p.nextOf(wire.OpReadRequest)
		go p.drainAll()
		settle(24 * time.Hour)
		if s := e.qp.State(); s != rdma.StateRTS {
			t.Fatalf("state %v (%v) with the operation timeout off", s, e.qp.Err())
		}
	})
}

// TestOpTimeoutIdle: the timer runs only while the QP waits on its peer:
// an idle QP has none armed, and an idle connection is never timed out.
func TestOpTimeoutIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, p := scriptedPipe(t, timedOpts())
		src := e.register(t, []byte("ping"), 0)
		e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(src)}, Remote: rdma.RemoteBuffer{STag: 0x5500}})
		p.nextOf(wire.OpWrite)
		e.want(t, 1, rdma.StatusSuccess)
		go p.drainAll()
		settle(tick) // the first tick finds the QP idle and disarms
		e.qp.mu.Lock()
		armed := e.qp.timer.armed
		e.qp.mu.Unlock()
		if armed {
			t.Error("the operation timeout is still armed on an idle QP")
		}
		settle(24 * time.Hour)
		if s := e.qp.State(); s != rdma.StateRTS {
			t.Fatalf("state %v (%v): an idle connection was timed out", s, e.qp.Err())
		}
	})
}

// TestDisconnectPeerNeverCloses: after Disconnect half-closed, a peer
// that never closes its side fails the QP after the operation timeout
// (ErrPeerStalled), and Disconnect returns.
func TestDisconnectPeerNeverCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, p := scriptedPipe(t, timedOpts())
		go p.drainAll() // reads our FIN, never closes its side
		returned := make(chan error, 1)
		go func() { returned <- e.qp.Disconnect(t.Context()) }()
		settle(opTimeout - time.Millisecond)
		select {
		case err := <-returned:
			t.Fatalf("Disconnect returned %v before the operation timeout", err)
		default:
		}
		settle(time.Millisecond + tick)
		select {
		case err := <-returned:
			if err != nil {
				t.Errorf("Disconnect: %v", err)
			}
		default:
			t.Fatal("Disconnect has not returned one period after the operation timeout")
		}
		if err := e.qp.Err(); !errors.Is(err, ErrPeerStalled) {
			t.Errorf("error %v, want %v", err, ErrPeerStalled)
		}
	})
}

// TestTerminateDrain: after sending a Terminate the QP half-closes and
// reads and discards input; a peer that never closes its side has the
// connection closed once the drain timeout passed, whatever the operation
// timeout (off here).
func TestTerminateDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = 3 * time.Second
		o := timedOpts()
		o.opTimeout, o.drain = 0, drain
		e, p := scriptedPipe(t, o)
		p.sendMsg(wire.OpSend, 0, []byte("no receive posted")) // Terminate DDP/2/0x02
		u := p.nextOf(wire.OpTerminate)
		if u.Terminate.Code != rdma.TermDDPNoBuffer {
			t.Errorf("Terminate %v, want %v", u.Terminate.Code, rdma.TermDDPNoBuffer)
		}
		if _, err := p.next(); err == nil {
			t.Fatal("the QP sent more after its Terminate")
		} // the half-close: end of stream
		// The peer keeps sending: drained, not read.
		p.sendMsg(wire.OpSend, 0, []byte("ignored"))
		settle(drain - time.Millisecond)
		if s := e.qp.State(); s != rdma.StateTerminate {
			t.Fatalf("state %v before the drain timeout, want %v", s, rdma.StateTerminate)
		}
		settle(time.Millisecond)
		select {
		case <-e.qp.Done():
		default:
			t.Fatalf("not torn down at the drain timeout (state %v)", e.qp.State())
		}
	})
}
