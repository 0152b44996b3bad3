package verbs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/leakcheck"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The defects of the engine review (issue 17) at the shell's level, each
// a test that fails without the design: the token holders never wait for
// a pin they would release themselves, teardown closes the connection
// instead of waiting on the peer, the poller re-arms without a timer, and
// the Core generates an atomic only after the Read Responses before it.

// bigRead is larger than what the loopback socket buffers hold while the
// peer reads nothing, so its Read Response keeps the sender writing.
const bigRead = 32 << 20

// noLeaks fails the test if goroutines of the shell are still running a
// while after every QP of the test was closed.
func noLeaks(t *testing.T) {
	t.Helper()
	if bad := leakcheck.Leaked(bound, "internal/verbs.(*QP)", "internal/verbs.(*rxHandler)"); len(bad) > 0 {
		t.Fatalf("%d goroutines of the shell still running after Close:\n%s", len(bad), bad[0])
	}
}

// recvSync makes the peer send a Send and waits until e's receive id
// completes with it: everything the peer sent before was processed.
func recvSync(t *testing.T, e *end, p *peer, id uint64) {
	t.Helper()
	p.sendMsg(wire.OpSend, 0, []byte("sync"))
	e.want(t, id, rdma.StatusSuccess)
}

// postRecv64 posts one 64-byte receive with ID id and returns its buffer.
func postRecv64(t *testing.T, e *end, id uint64) []byte {
	t.Helper()
	buf := make([]byte, 64)
	e.postRecv(t, rdmap.RecvWR{ID: id, SGL: []rdma.SGE{whole(e.register(t, buf, mem.AccessLocalWrite))}})
	return buf
}

// TestDefect01LocalInvalidateBehindReadResponse: defect 1, a Local
// Invalidate WR waited for the pin of a Read Response still in the
// transmit batch, on the goroutine that would release it: Close never
// returned. Here a large Write keeps the transmitter busy while the peer
// reads nothing; the peer Reads 1 MiB of region x (referenced by the
// Encoder under a lease), x is invalidated locally behind it. With the
// peer reading everything, the Write, the Read Response (x's bytes from
// before the invalidation) and the invalidation complete; with a peer
// that never reads, Close returns.
func TestDefect01LocalInvalidateBehindReadResponse(t *testing.T) {
	const xLen = 1 << 20
	for _, peerReads := range []bool{true, false} {
		e, p := scripted(t, defaultOpts())
		x := e.register(t, bytes.Repeat([]byte{3}, xLen), mem.AccessRemoteRead)
		src := e.register(t, make([]byte, bigRead), 0)
		postRecv64(t, e, 900)
		e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(src)}, Remote: rdma.RemoteBuffer{STag: 0x5500}})
		for e.qp.Stats().FPDUsSent == 0 {
			runtime.Gosched() // the Write has begun (a transmit goroutine may write it)
		}
		p.readRequest(wire.ReadRequest{SinkSTag: 0x6600, Size: xLen, SrcSTag: uint32(x.STag()), SrcTO: x.Base()})
		recvSync(t, e, p, 900) // the Read Request is queued behind the Write
		e.post(t, rdmap.SendWR{ID: 2, Op: rdma.OpLocalInvalidate, Flags: rdma.Signaled, InvalidateSTag: uint32(x.STag())})
		if !peerReads {
			e.closeWithin(t)
			if c := e.next(t); c.ID != 1 || c.Status != rdma.StatusFlushed {
				t.Fatalf("peer not reading: completion %+v, want the Write flushed", c.Completion)
			}
			// Never started (it waited behind the Write): flushed, x valid.
			if c := e.next(t); c.ID != 2 || c.Status != rdma.StatusFlushed {
				t.Fatalf("peer not reading: completion %+v, want the Local Invalidate flushed", c.Completion)
			}
			continue
		}
		response := make(chan []byte, 1)
		go func() { // the peer now reads everything
			var got []byte
			for {
				u, err := p.next()
				if err != nil {
					break
				}
				if u.Opcode == wire.OpReadResponse {
					got = append(got, u.Payload...)
					if u.DDP.Last {
						break
					}
				}
			}
			response <- got
		}()
		e.want(t, 1, rdma.StatusSuccess)
		e.want(t, 2, rdma.StatusSuccess)
		if got := <-response; !bytes.Equal(got, bytes.Repeat([]byte{3}, xLen)) {
			t.Errorf("the Read Response carried %d octets, want %d of x's", len(got), xLen)
		}
		if x.Valid() {
			t.Error("x is still valid after its Local Invalidate completed")
		}
		e.closeWithin(t)
	}
	noLeaks(t)
}

// peerReadsBig makes the peer Read bigRead octets of a region of e and
// read nothing: once it returns, e's QP is writing the Read Response and
// waits for room (the peer's later Send proved the request processed).
func peerReadsBig(t *testing.T, e *end, p *peer, access mem.Access) *mem.Region {
	t.Helper()
	x := e.register(t, make([]byte, bigRead), access)
	postRecv64(t, e, 900)
	p.readRequest(wire.ReadRequest{SinkSTag: 0x5500, Size: bigRead, SrcSTag: uint32(x.STag()), SrcTO: x.Base()})
	recvSync(t, e, p, 900)
	return x
}

// TestDefect02SendInvalidateWhileResponsePinned: defect 2, the peer Reads
// a large region x, sends a Send with Invalidate naming x and stops
// reading: the receive goroutine waited forever for the Read Response's
// pin; the operation timeout fired but Close still hung. A remote peer
// could cause it. Now the invalidation begins at once and the receive's
// completion waits for the Read Response's lease; the operation timeout
// fails the QP, which ends the lease, so the receive completes once and
// Close returns.
func TestDefect02SendInvalidateWhileResponsePinned(t *testing.T) {
	const opTimeout = time.Second
	o := defaultOpts()
	o.opTimeout = opTimeout
	e, p := scripted(t, o)
	x := e.register(t, make([]byte, bigRead), mem.AccessRemoteRead|mem.AccessRemoteInvalidate)
	postRecv64(t, e, 7)
	p.readRequest(wire.ReadRequest{SinkSTag: 0x5500, Size: bigRead, SrcSTag: uint32(x.STag()), SrcTO: x.Base()})
	p.sendMsg(wire.OpSendInv, uint32(x.STag()), []byte("bye"))
	select {
	case <-e.qp.Done():
	case <-time.After(opTimeout + bound):
		t.Fatalf("QP not torn down %v after its operation timeout (state %v, error %v)", bound, e.qp.State(), e.qp.Err())
	}
	if err := e.qp.Err(); !errors.Is(err, ErrPeerStalled) {
		t.Errorf("QP error %v, want %v", err, ErrPeerStalled)
	}
	e.closeWithin(t)
	c := e.next(t)
	if c.ID != 7 || c.Invalidated != uint32(x.STag()) {
		t.Fatalf("completion %+v, want receive 7 invalidating x", c.Completion)
	}
	if x.Valid() {
		t.Error("x is still valid after the Send with Invalidate completed")
	}
	if n := e.cq.Len(); n != 0 {
		t.Errorf("%d more completions, want none (the receive completes once)", n)
	}
	noLeaks(t)
}

// TestDefect03NoPlacementAfterDeregister: defect 3, bytes were placed
// after Deregister (or an invalidation) returned nil. Once it returned, no
// byte may land in the memory nor be read from it, and the work request
// naming it completes with StatusLocalProtection.
func TestDefect03NoPlacementAfterDeregister(t *testing.T) {
	payload := []byte("AFTER-DEREGISTER")
	ctx := context.Background()
	// setup returns an end with a zeroed 16-byte buffer registered.
	setup := func(t *testing.T, access mem.Access) (*end, *peer, *mem.Region, []byte) {
		e, p := scripted(t, defaultOpts())
		buf := make([]byte, 16)
		return e, p, e.register(t, buf, access), buf
	}
	readInto := func(t *testing.T, e *end, p *peer, sink *mem.Region) wire.ReadRequest {
		e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(sink)}, Remote: rdma.RemoteBuffer{STag: 0x5500}})
		return p.nextOf(wire.OpReadRequest).ReadRequest
	}
	untouched := func(t *testing.T, c CQE, id uint64, buf []byte) {
		t.Helper()
		if c.ID != id || c.Status != rdma.StatusLocalProtection {
			t.Errorf("completion %+v, want %d with %v", c.Completion, id, rdma.StatusLocalProtection)
		}
		if !bytes.Equal(buf, make([]byte, len(buf))) {
			t.Errorf("bytes landed after Deregister returned: %q", buf)
		}
	}
	t.Run("Read-sink-deregistered", func(t *testing.T) {
		e, p, sink, buf := setup(t, mem.AccessLocalWrite)
		rr := readInto(t, e, p, sink)
		if err := e.table.Deregister(ctx, sink); err != nil {
			t.Fatal(err)
		}
		p.send(tagged(wire.OpReadResponse, rr.SinkSTag, rr.SinkTO, payload))
		untouched(t, e.next(t), 1, buf)
		e.closeWithin(t)
	})
	t.Run("Read-sink-invalidated-by-peer", func(t *testing.T) {
		e, p, sink, buf := setup(t, mem.AccessLocalWrite|mem.AccessRemoteInvalidate)
		postRecv64(t, e, 7)
		rr := readInto(t, e, p, sink)
		p.sendMsg(wire.OpSendInv, uint32(sink.STag()), nil)
		if c := e.next(t); c.ID != 7 || c.Invalidated != uint32(sink.STag()) {
			t.Fatalf("completion %+v, want receive 7 invalidating the sink", c.Completion)
		}
		p.send(tagged(wire.OpReadResponse, rr.SinkSTag, rr.SinkTO, payload))
		untouched(t, e.next(t), 1, buf)
		e.closeWithin(t)
	})
	t.Run("Send-into-deregistered-receive", func(t *testing.T) {
		e, p, rb, buf := setup(t, mem.AccessLocalWrite)
		e.postRecv(t, rdmap.RecvWR{ID: 7, SGL: []rdma.SGE{whole(rb)}})
		if err := e.table.Deregister(ctx, rb); err != nil {
			t.Fatal(err)
		}
		p.sendMsg(wire.OpSend, 0, payload)
		untouched(t, e.next(t), 7, buf)
		e.closeWithin(t)
	})
	t.Run("atomic-result-deregistered", func(t *testing.T) {
		e, p, res, buf := setup(t, mem.AccessLocalWrite)
		e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: uint32(res.STag()), Length: 8}}, Remote: rdma.RemoteBuffer{STag: 0x5500}, Add: 1})
		req := p.nextOf(wire.OpAtomicRequest).AtomicRequest
		if err := e.table.Deregister(ctx, res); err != nil {
			t.Fatal(err)
		}
		resp := wire.AtomicResponse{RequestID: req.RequestID, OriginalValue: 0x4141414141414141}
		p.send(p.untagged(wire.OpAtomicResponse, wire.QNResponse, 0, wire.AppendAtomicResponse(nil, &resp), nil))
		untouched(t, e.next(t), 1, buf)
		e.closeWithin(t)
	})
	t.Run("send-source-deregistered", func(t *testing.T) {
		// A large Write fills the socket while the peer reads nothing;
		// a Send queued behind it has its source deregistered. The peer
		// then reads everything: the Send's bytes never reach it.
		e, p := scripted(t, defaultOpts())
		big := e.register(t, make([]byte, bigRead), 0)
		secret := bytes.Repeat([]byte("SECRET"), 2000)
		src := e.register(t, secret, 0)
		e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(big)}, Remote: rdma.RemoteBuffer{STag: 0x5500}},
			rdmap.SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(src)}})
		if err := e.table.Deregister(ctx, src); err != nil {
			t.Fatal(err)
		}
		ops := make(chan []wire.Opcode, 1)
		go func() { o, _ := p.drainAll(); ops <- o }()
		// The Send fails when its turn comes, which moves the QP to
		// ERROR: the Write completes if its last octet was written by
		// then, else it is flushed.
		if c := e.next(t); c.ID != 1 || (c.Status != rdma.StatusSuccess && c.Status != rdma.StatusFlushed) {
			t.Fatalf("completion %+v, want the Write", c.Completion)
		}
		e.want(t, 2, rdma.StatusLocalProtection)
		e.closeWithin(t)
		if got := <-ops; slices.Contains(got, wire.OpSend) {
			t.Errorf("the peer received a Send from a deregistered source (messages %v)", got)
		}
	})
	noLeaks(t)
}

// TestDefect05DisconnectRacingLongPost: defect 5, Disconnect racing a
// PostSend of more work requests than one transmit batch stranded the
// rest of the send queue, and Disconnect never returned. Each round
// disconnects as soon as the first FPDU of the batch was sent, while the
// poster may still be writing; Disconnect must transmit and complete all
// the posted work and return nil (whoever releases the transmit token
// last sends what was left).
func TestDefect05DisconnectRacingLongPost(t *testing.T) {
	const (
		rounds = 50
		wrs    = 150
	)
	for round := 0; round < rounds; round++ {
		o := defaultOpts()
		o.sq = 192
		o.cqCapacity = 192 + o.rq
		a, b := pair(t, o, o)
		dst := b.register(t, make([]byte, 1024), mem.AccessRemoteWrite)
		src := a.register(t, make([]byte, 1024), 0)
		batch := make([]rdmap.SendWR, wrs)
		for i := range batch {
			batch[i] = rdmap.SendWR{ID: uint64(i), Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(src)},
				Remote: rdma.RemoteBuffer{STag: uint32(dst.STag()), TO: dst.Base()}}
		}
		posted := make(chan error, 1)
		go func() { _, err := a.qp.PostSend(batch); posted <- err }()
		deadline := time.Now().Add(bound)
		for a.qp.Stats().FPDUsSent == 0 {
			if time.Now().After(deadline) {
				t.Fatal("nothing of the batch was sent")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		err := a.qp.Disconnect(ctx)
		cancel()
		if perr := <-posted; perr != nil {
			t.Fatalf("round %d: PostSend: %v", round, perr)
		}
		if err != nil {
			t.Fatalf("round %d: Disconnect: %v (%d FPDUs of %d Writes sent)", round, err, a.qp.Stats().FPDUsSent, wrs)
		}
		for i := 0; i < wrs; i++ {
			a.want(t, uint64(i), rdma.StatusSuccess)
		}
		a.closeWithin(t)
		b.closeWithin(t)
	}
	noLeaks(t)
}

// TestDefect06DisconnectRacingTeardown: defect 6, Disconnect and the
// teardown raced for the transmit role and the loser waited forever: the
// peer closed while Disconnect waited for a transmitter blocked on it, or
// the operation timeout fired meanwhile. Disconnect must return, and the
// QP be torn down.
func TestDefect06DisconnectRacingTeardown(t *testing.T) {
	t.Run("peer-closes", func(t *testing.T) {
		for round := 0; round < 20; round++ {
			e, p := scripted(t, defaultOpts())
			peerReadsBig(t, e, p, mem.AccessRemoteRead)
			disconnected := make(chan error, 1)
			go func() { disconnected <- e.qp.Disconnect(context.Background()) }()
			for e.qp.State() == rdma.StateRTS {
				runtime.Gosched() // Disconnect moves the QP to CLOSING at once
			}
			p.nc.Close() // the peer dies while Disconnect waits
			select {
			case <-e.qp.Done():
			case <-time.After(bound):
				t.Fatalf("round %d: the QP is never torn down after the peer closed (state %v)", round, e.qp.State())
			}
			select {
			case <-disconnected:
			case <-time.After(bound):
				t.Fatalf("round %d: Disconnect never returned although the QP was torn down", round)
			}
			e.closeWithin(t)
		}
	})
	t.Run("op-timeout", func(t *testing.T) {
		const opTimeout = 300 * time.Millisecond
		o := defaultOpts()
		o.opTimeout = opTimeout
		for round := 0; round < 3; round++ {
			e, p := scripted(t, o)
			peerReadsBig(t, e, p, mem.AccessRemoteRead)
			var err error
			if !returnsWithin(opTimeout+bound, func() { err = e.qp.Disconnect(context.Background()) }) {
				t.Fatalf("round %d: Disconnect (operation timeout %v) has not returned after %v (state %v)", round, opTimeout, opTimeout+bound, e.qp.State())
			}
			if err != nil || !errors.Is(e.qp.Err(), ErrPeerStalled) {
				t.Fatalf("round %d: Disconnect %v, QP error %v: want nil and %v", round, err, e.qp.Err(), ErrPeerStalled)
			}
			e.closeWithin(t)
		}
	})
	noLeaks(t)
}

// TestDefect07DisconnectHonoursContext: defect 7, Disconnect ignored its
// context while the transmitter was blocked on a peer that does not read
// (operation timeout off), and in TERMINATE. It must return soon after
// its context ends.
func TestDefect07DisconnectHonoursContext(t *testing.T) {
	t.Run("peer-not-reading", func(t *testing.T) {
		e, p := scripted(t, defaultOpts())
		peerReadsBig(t, e, p, mem.AccessRemoteRead)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		var err error
		if !returnsWithin(bound, func() { err = e.qp.Disconnect(ctx) }) {
			t.Fatalf("Disconnect (context 200 ms) has not returned after %v (state %v)", bound, e.qp.State())
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Disconnect: %v, want the context's error", err)
		}
		e.closeWithin(t)
	})
	t.Run("terminate", func(t *testing.T) {
		o := defaultOpts()
		o.drain = time.Hour // only the context can end the wait
		e, p := scripted(t, o)
		// No receive is posted: the Send is Terminate DDP/2/0x02. The
		// peer reads the Terminate and keeps its side open.
		p.sendMsg(wire.OpSend, 0, []byte("no receive"))
		p.nextOf(wire.OpTerminate)
		if s := e.qp.State(); s != rdma.StateTerminate {
			t.Fatalf("state %v, want %v", s, rdma.StateTerminate)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var err error
		if !returnsWithin(bound, func() { err = e.qp.Disconnect(ctx) }) {
			t.Fatalf("Disconnect (context 50 ms) in TERMINATE has not returned after %v", bound)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Disconnect: %v, want the context's error", err)
		}
		e.closeWithin(t)
	})
	noLeaks(t)
}

// TestDefect12ResponderStall: defect 12, after the responder's application
// waited on its CQ, what the peer sent next waited up to a receive
// backstop of 10 ms unread. No received byte may wait on a timer: the
// poller re-arms the socket whenever the receive token goes free. The
// median of 1-byte Reads issued right after the responder's CQ wait
// returned must stay far below the old backstop.
func TestDefect12ResponderStall(t *testing.T) {
	const (
		rounds = 21
		limit  = 3 * time.Millisecond // the stall was 10 ms; a healthy Read is ~0.1 ms
	)
	a, b := defaultPair(t)
	region := b.register(t, make([]byte, 64), mem.AccessRemoteRead)
	sink := a.register(t, make([]byte, 1), mem.AccessLocalWrite)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var took []time.Duration
	for round := 0; round < rounds; round++ {
		b.postRecv(t, rdmap.RecvWR{ID: uint64(round)})
		got := make(chan CQE, 1)
		go func() { got <- b.next(t) }() // the responder waits on its CQ
		if c, err := a.qp.Do(ctx, rdmap.SendWR{Op: rdma.OpSend}); err != nil || c.Status != rdma.StatusSuccess {
			t.Fatalf("Send: %+v, %v", c, err)
		}
		<-got
		start := time.Now()
		c, err := a.qp.Do(ctx, rdmap.SendWR{Op: rdma.OpRead, SGL: []rdma.SGE{whole(sink)}, Remote: rdma.RemoteBuffer{STag: uint32(region.STag()), TO: region.Base()}})
		if err != nil || c.Status != rdma.StatusSuccess {
			t.Fatalf("Read: %+v, %v", c, err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	if median := took[rounds/2]; median > limit {
		t.Errorf("a 1-byte Read right after the responder's CQ wait: median %v over %d rounds (min %v, max %v), want under %v", median, rounds, took[0], took[rounds-1], limit)
	}
}

// TestDefect13ReadThenAtomic: defect 13, a Read followed by an atomic on
// the same word returned the value after the atomic. RFC 7306 §7: the
// Atomic Response is not generated until the Read Response before it has
// been, so the Read (posted first) and the FetchAdd both see the value
// before the FetchAdd.
func TestDefect13ReadThenAtomic(t *testing.T) {
	a, b := defaultPair(t)
	src := make([]byte, bigRead)
	binary.NativeEndian.PutUint64(src[bigRead-8:], 1000)
	region := b.register(t, src, mem.AccessRemoteRead|mem.AccessRemoteAtomic)
	sink := a.register(t, make([]byte, bigRead), mem.AccessLocalWrite)
	a.post(t,
		rdmap.SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(sink)}, Remote: rdma.RemoteBuffer{STag: uint32(region.STag()), TO: region.Base()}},
		rdmap.SendWR{ID: 2, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: uint32(region.STag()), TO: region.Base() + bigRead - 8}, Add: 1},
	)
	a.want(t, 1, rdma.StatusSuccess)
	add := a.want(t, 2, rdma.StatusSuccess)
	if got := binary.NativeEndian.Uint64(sink.Bytes()[bigRead-8:]); got != add.Original || got != 1000 {
		t.Errorf("the Read (posted first) returned %d, the FetchAdd (posted after it) found %d: want 1000 for both", got, add.Original)
	}
	if v := region.AtomicLoad(region.Base() + bigRead - 8); v != 1001 { // the responder's atomic: no happens-before with this goroutine but the network
		t.Errorf("the target holds %d after the FetchAdd, want 1001", v)
	}
}
