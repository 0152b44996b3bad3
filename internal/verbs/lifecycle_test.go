package verbs

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/testnet"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The life of a QP: IDLE, RTS, the orderly and the abrupt end.

// TestPostBeforeStart: send work is refused before Start
// (ErrNotConnected); receives posted before are used after.
func TestPostBeforeStart(t *testing.T) {
	o := defaultOpts()
	a, b := newEnd(t, o), newEnd(t, o)
	rb := make([]byte, 16)
	b.postRecv(t, rdmap.RecvWR{ID: 5, SGL: []rdma.SGE{whole(b.register(t, rb, mem.AccessLocalWrite))}})
	if _, err := a.qp.PostSend([]rdmap.SendWR{{Op: rdma.OpSend}}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("PostSend before Start: %v, want %v", err, ErrNotConnected)
	}
	if s := a.qp.State(); s != rdma.StateIdle {
		t.Fatalf("state %v before Start", s)
	}
	ca, cb := testnet.TCPPair(t)
	a.start(t, ca, o)
	b.start(t, cb, o)
	if err := a.qp.Start(ca, Setup{}); !errors.Is(err, rdmap.ErrQPState) {
		t.Errorf("a second Start: %v, want %v", err, rdmap.ErrQPState)
	}
	a.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(a.register(t, []byte("early"), 0))}})
	a.want(t, 1, rdma.StatusSuccess)
	if c := b.want(t, 5, rdma.StatusSuccess); string(rb[:c.Len]) != "early" {
		t.Fatalf("received %q", rb[:c.Len])
	}
}

// TestCloseNeverStarted: closing a QP that never connected flushes its
// receives (ErrLocallyClosed); concurrent Close calls run the teardown
// once and all return (defect 9); the QP accepts nothing afterwards.
func TestCloseNeverStarted(t *testing.T) {
	for round := 0; round < 200; round++ {
		e := newEnd(t, defaultOpts())
		e.postRecv(t, rdmap.RecvWR{ID: 1}, rdmap.RecvWR{ID: 2})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { e.qp.Close() })
		}
		wg.Wait()
		for _, id := range []uint64{1, 2} {
			if c := e.want(t, id, rdma.StatusFlushed); !errors.Is(c.Err, rdmap.ErrLocallyClosed) {
				t.Fatalf("flushed receive's error %v", c.Err)
			}
		}
		if n := e.cq.Len(); n != 0 {
			t.Fatalf("%d more completions", n)
		}
		if _, err := e.qp.PostRecv([]rdmap.RecvWR{{ID: 3}}); !errors.Is(err, rdmap.ErrQPState) {
			t.Fatalf("PostRecv after Close: %v", err)
		}
		ca, _ := testnet.TCPPair(t)
		if err := e.qp.Start(ca, Setup{}); !errors.Is(err, rdmap.ErrQPState) {
			t.Fatalf("Start after Close: %v", err)
		}
	}
}

// TestPostRecvDuringTeardown: receives posted while the QP is torn down
// (defect 8) are either refused or complete, exactly once.
func TestPostRecvDuringTeardown(t *testing.T) {
	for round := 0; round < 50; round++ {
		o := defaultOpts()
		o.rq = 256
		a, _ := pair(t, o, o)
		var posted atomic.Int64
		stop, first := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for id := uint64(0); ; id++ {
				if id == 1 {
					close(first)
				}
				select {
				case <-stop:
					return
				default:
				}
				n, err := a.qp.PostRecv([]rdmap.RecvWR{{ID: id}})
				posted.Add(int64(n))
				if err != nil {
					if !errors.Is(err, rdmap.ErrQPState) && !errors.Is(err, rdmap.ErrRQFull) {
						t.Errorf("PostRecv: %v", err)
					}
					if errors.Is(err, rdmap.ErrQPState) {
						return
					}
				}
			}
		})
		<-first // the poster is running: Close races its next posts
		a.qp.Close()
		close(stop)
		wg.Wait()
		if n := int64(a.cq.Len()); n != posted.Load() {
			t.Fatalf("round %d: %d receives posted, %d completed", round, posted.Load(), n)
		}
	}
}

// TestDisconnectOrderly: Disconnect transmits and completes the posted
// work, the peer's QP ends with ErrPeerDisconnected and ours with
// ErrDisconnected; receives still posted are flushed and OnDone runs once
// per QP.
func TestDisconnectOrderly(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			o := modeOpts(m.noPoll, m.pipe)
			a, b := newEnd(t, o), newEnd(t, o)
			// OnDone runs after Done closed, on the goroutine that
			// finished the teardown: perhaps after Close returned.
			doneA, doneB := make(chan struct{}, 2), make(chan struct{}, 2)
			a.qp.cfg.OnDone = func(*QP) { doneA <- struct{}{} }
			b.qp.cfg.OnDone = func(*QP) { doneB <- struct{}{} }
			var ca, cb net.Conn = pipePair()
			if !m.pipe {
				ca, cb = testnet.TCPPair(t)
			}
			a.start(t, ca, o)
			b.start(t, cb, o)
			dst := b.register(t, make([]byte, 1<<20), mem.AccessRemoteWrite|mem.AccessRemoteRead)
			src := a.register(t, make([]byte, 1<<20), mem.AccessLocalWrite)
			b.postRecv(t, rdmap.RecvWR{ID: 50})
			a.postRecv(t, rdmap.RecvWR{ID: 60})
			a.post(t, remote(rdmap.SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(src)}}, dst, 0),
				remote(rdmap.SendWR{ID: 2, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(src)}}, dst, 0))
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			if err := a.qp.Disconnect(ctx); err != nil {
				t.Fatalf("Disconnect: %v", err)
			}
			a.want(t, 1, rdma.StatusSuccess)
			a.want(t, 2, rdma.StatusSuccess)
			a.want(t, 60, rdma.StatusFlushed)
			<-b.qp.Done()
			b.want(t, 50, rdma.StatusFlushed)
			if !errors.Is(a.qp.Err(), rdmap.ErrDisconnected) || !errors.Is(b.qp.Err(), rdmap.ErrPeerDisconnected) {
				t.Errorf("errors %v and %v, want %v and %v", a.qp.Err(), b.qp.Err(), rdmap.ErrDisconnected, rdmap.ErrPeerDisconnected)
			}
			a.closeWithin(t)
			b.closeWithin(t)
			for _, ch := range []chan struct{}{doneA, doneB} {
				select {
				case <-ch:
				case <-time.After(bound):
					t.Fatal("OnDone did not run")
				}
			}
			if len(doneA)+len(doneB) != 0 {
				t.Error("OnDone ran more than once")
			}
		})
	}
}

// TestHoldSendUntilReceive: the MPA Responder rule (RFC 5044 §7.1.2):
// nothing is sent before the peer's first octet arrived; then what was
// held goes at once.
func TestHoldSendUntilReceive(t *testing.T) {
	o := defaultOpts()
	o.framing.HoldSendUntilReceive = true
	e, p := scripted(t, o)
	postRecv64(t, e, 9)
	e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(e.register(t, []byte("held"), 0))}})
	// An unheld poster writes before PostSend returns.
	if n := e.qp.Stats().FPDUsSent; n != 0 {
		t.Fatalf("%d FPDUs sent before the peer's first octet", n)
	}
	p.sendMsg(wire.OpSend, 0, []byte("first"))
	if u := p.nextOf(wire.OpSend); string(u.Payload) != "held" {
		t.Fatalf("the held Send carried %q", u.Payload)
	}
	e.want(t, 9, rdma.StatusSuccess)
	e.want(t, 1, rdma.StatusSuccess)
}

// TestRevokeOnDeregisterContext: a Deregister whose context ends while a
// QP holds a lease on the region (a Read Response to a peer that does not
// read) revokes the lease: the QP fails and closes its connection, the
// Deregister returns within a bound with an error matching the context's,
// naming one holder, and Close returns.
func TestRevokeOnDeregisterContext(t *testing.T) {
	e, p := scripted(t, defaultOpts())
	x := peerReadsBig(t, e, p, mem.AccessRemoteRead)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var err error
	if !returnsWithin(bound, func() { err = e.table.Deregister(ctx, x) }) {
		t.Fatalf("Deregister has not returned after %v", bound)
	}
	var re *mem.RevokedError
	if !errors.As(err, &re) || re.Holders != 1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Deregister: %v, want a revocation of one holder matching the context's error", err)
	}
	<-e.qp.Done()
	if !errors.Is(e.qp.Err(), rdmap.ErrLeaseRevoked) {
		t.Errorf("QP error %v, want %v", e.qp.Err(), rdmap.ErrLeaseRevoked)
	}
	e.closeWithin(t)
	noLeaks(t)
}

// TestStartPending: octets of the full-operation stream that the startup
// already read (Setup.Pending) are taken first, before the connection's.
func TestStartPending(t *testing.T) {
	e := newEnd(t, defaultOpts())
	rb := make([]byte, 16)
	e.postRecv(t, rdmap.RecvWR{ID: 1, SGL: []rdma.SGE{whole(e.register(t, rb, mem.AccessLocalWrite))}},
		rdmap.RecvWR{ID: 2, SGL: []rdma.SGE{whole(e.register(t, make([]byte, 16), mem.AccessLocalWrite))}})
	ca, cb := testnet.TCPPair(t)
	p := newPeer(t, cb)
	// The first Send, framed as the peer's first FPDU, was read by the
	// startup; the second comes over the connection.
	enc := fpdu.NewEncoder(fpdu.Options{CRC: true}, 0)
	if err := enc.AppendCopy(p.untagged(wire.OpSend, wire.QNSend, 0, nil, []byte("pending"))); err != nil {
		t.Fatal(err)
	}
	var pending []byte
	for _, b := range enc.Bufs(nil) {
		pending = append(pending, b...)
	}
	enc.Done(len(pending))
	// The connection's stream continues after those octets: the peer's
	// Writer must frame its next FPDU at that offset (markers are off, so
	// only the order matters).
	if err := e.qp.Start(ca, Setup{Framing: fpdu.Options{CRC: true}, Params: defaultOpts().params, Pending: pending}); err != nil {
		t.Fatal(err)
	}
	if c := e.want(t, 1, rdma.StatusSuccess); string(rb[:c.Len]) != "pending" {
		t.Fatalf("the pending Send placed %q", rb[:c.Len])
	}
	p.sendMsg(wire.OpSend, 0, []byte("later"))
	e.want(t, 2, rdma.StatusSuccess)
}
