package iwarp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/conform"
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
)

// The defects of the engine review (issue 17) that the engine rebuild
// fixed (docs/engine-rebuild.md): hangs, memory lifetime, the responder
// stall, Read then Atomic. Each failed on the old engine within its bounds
// (a hang leaves goroutines behind, which the package's leak check reports
// too); they run with the rest of the suite.

// bigRead is larger than what the loopback socket buffers hold while the
// peer reads nothing, so its Read Response keeps the sender writing.
const bigRead = 32 << 20

// endpointWith is newEndpoint with the QP configuration changed by mod
// (its CQ holds 256 completions: the queue depths may add up to that).
func endpointWith(t *testing.T, mod func(*iwarp.QPConfig)) *endpoint {
	t.Helper()
	ep := newEndpoint(t)
	ep.qp.Close() // never connected: this gives its CQ reservation back
	cfg := iwarp.QPConfig{SendCQ: ep.cq, RecvCQ: ep.cq, SendQueueDepth: 64, RecvQueueDepth: 64}
	mod(&cfg)
	qp, err := ep.pd.NewQP(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	ep.qp = qp
	return ep
}

// returnsWithin runs f on its own goroutine and reports whether it returned
// within d (a hung f is left behind).
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

// closeWithin closes ep's QP, failing the test if Close does not return
// within defectWait.
func closeWithin(t *testing.T, ep *endpoint) {
	t.Helper()
	if !returnsWithin(defectWait, func() { ep.qp.Close() }) {
		t.Fatalf("Close has not returned after %v (state %v)", defectWait, ep.qp.State())
	}
}

// nextCompletion waits for ep's next completion, at most defectWait.
func nextCompletion(t *testing.T, ep *endpoint, what string) iwarp.Completion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), defectWait)
	defer cancel()
	c, err := ep.cq.Next(ctx)
	if err != nil {
		t.Fatalf("waiting for %s: %v (state %v, error %v)", what, err, ep.qp.State(), ep.qp.Err())
	}
	return c
}

// recvSync makes the peer send a Send and waits until ep's receive wr
// completes with it: everything the peer sent before was processed.
func recvSync(t *testing.T, ep *endpoint, p *scriptedPeer, id uint64) {
	t.Helper()
	p.send(t, conform.Untagged(p.rv, wire.OpSend, true, wire.QNSend, p.nextMSN(wire.QNSend), 0, []byte("sync")))
	if c := nextCompletion(t, ep, "the peer's Send"); c.ID != id || c.Status != iwarp.StatusSuccess {
		t.Fatalf("completion %+v, want receive %d", c, id)
	}
}

// postRecv posts one 64-byte receive with ID id on ep's QP.
func postRecv(t *testing.T, ep *endpoint, id uint64) []byte {
	t.Helper()
	buf := make([]byte, 64)
	mr, err := ep.pd.RegisterMemory(buf, iwarp.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.qp.PostRecv(iwarp.RecvWR{ID: id, SGL: []iwarp.SGE{mr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	return buf
}

// peerReadsBig makes the peer Read bigRead octets of a region of ep and
// read nothing: once it returns, ep's QP is writing the Read Response and
// blocks in it (the peer's later Send proved the request processed).
func peerReadsBig(t *testing.T, ep *endpoint, access iwarp.Access) (*scriptedPeer, *iwarp.MR) {
	t.Helper()
	x, err := ep.pd.RegisterMemory(make([]byte, bigRead), access)
	if err != nil {
		t.Fatal(err)
	}
	postRecv(t, ep, 900)
	p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
	rr := wire.ReadRequest{SinkSTag: 0x5500, Size: bigRead, SrcSTag: x.STag()}
	p.send(t, conform.ReadRequest(p.rv, p.nextMSN(wire.QNReadReq), rr))
	recvSync(t, ep, p, 900)
	return p, x
}

// TestDefect01LocalInvalidateBehindReadResponse: defect 1, a Local
// Invalidate work request waited for the pin of a Read Response still in
// the transmit batch, on the goroutine that would release it: the
// transmit role was held forever and Close never returned. Here a large
// Write keeps the transmitter busy while the peer reads nothing; the peer
// Reads region x, x is invalidated locally, then the peer reads
// everything: the Write, the Read Response and the invalidation must
// complete, and Close must return.
func TestDefect01LocalInvalidateBehindReadResponse(t *testing.T) {
	ep := newEndpoint(t)
	x, err := ep.pd.RegisterMemory(bytes.Repeat([]byte{3}, 64), iwarp.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	src, err := ep.pd.RegisterMemory(make([]byte, bigRead), 0)
	if err != nil {
		t.Fatal(err)
	}
	postRecv(t, ep, 900)
	p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
	if err := ep.qp.PostSend(iwarp.SendWR{ID: 1, Op: iwarp.OpWrite, Flags: iwarp.Signaled, SGL: []iwarp.SGE{src.SGE(0, bigRead)}, Remote: iwarp.RemoteBuffer{STag: 0x5500, Len: bigRead}}); err != nil {
		t.Fatal(err)
	}
	for ep.qp.Stats().FPDUsSent == 0 {
		runtime.Gosched() // the Write has begun (a transmit goroutine may write it)
	}
	rr := wire.ReadRequest{SinkSTag: 0x6600, Size: 64, SrcSTag: x.STag()}
	p.send(t, conform.ReadRequest(p.rv, p.nextMSN(wire.QNReadReq), rr))
	recvSync(t, ep, p, 900) // the Read Request is queued behind the Write
	if err := ep.qp.PostSend(iwarp.SendWR{ID: 2, Op: iwarp.OpLocalInvalidate, Flags: iwarp.Signaled, InvalidateSTag: x.STag()}); err != nil {
		t.Fatal(err)
	}
	response := make(chan struct{})
	go func() { // the peer now reads everything
		defer close(response)
		for {
			_, u, err := p.next()
			if err != nil || u.Opcode == wire.OpReadResponse {
				return
			}
		}
	}()
	for _, id := range []uint64{1, 2} {
		if c := nextCompletion(t, ep, "the Write and the Local Invalidate"); c.ID != id || c.Status != iwarp.StatusSuccess {
			t.Fatalf("completion %+v, want %d successful", c, id)
		}
	}
	<-response
	closeWithin(t, ep)
}

// TestDefect02SendInvalidateWhileResponsePinned: defect 2, the peer Reads
// a large region x, sends a Send with Invalidate naming x and stops
// reading: the receive goroutine waited forever for the Read Response's
// pin; the operation timeout fired but Close still hung. A remote peer
// could cause it. The QP must be torn down by its operation timeout, the
// receive complete once, and Close return.
func TestDefect02SendInvalidateWhileResponsePinned(t *testing.T) {
	const opTimeout = time.Second
	ep := endpointWith(t, func(c *iwarp.QPConfig) { c.OpTimeout = opTimeout })
	x, err := ep.pd.RegisterMemory(make([]byte, bigRead), iwarp.AccessRemoteRead|iwarp.AccessRemoteInvalidate)
	if err != nil {
		t.Fatal(err)
	}
	postRecv(t, ep, 7)
	p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
	p.send(t, conform.ReadRequest(p.rv, p.nextMSN(wire.QNReadReq), wire.ReadRequest{SinkSTag: 0x5500, Size: bigRead, SrcSTag: x.STag()}))
	p.send(t, sendInvalidate(p, x.STag(), []byte("bye")))
	select {
	case <-ep.qp.Done():
	case <-time.After(opTimeout + defectWait):
		t.Fatalf("QP not torn down %v after its operation timeout (state %v, error %v)", defectWait, ep.qp.State(), ep.qp.Err())
	}
	closeWithin(t, ep)
	if c := nextCompletion(t, ep, "the receive"); c.ID != 7 {
		t.Fatalf("completion %+v, want receive 7", c)
	}
}

// TestDefect03NoPlacementAfterDeregister: defect 3, bytes were placed after
// Deregister (or an invalidation) returned nil: a Read Response into a
// deregistered or invalidated sink completed the Read with success, and a
// Send landed in a deregistered receive buffer. Once Deregister or the
// invalidation returned, no byte may land in the memory, and the work
// request naming it must not complete with success.
func TestDefect03NoPlacementAfterDeregister(t *testing.T) {
	payload := []byte("AFTER-DEREGISTER")
	// setup registers a zeroed 16-byte buffer of a new endpoint.
	setup := func(t *testing.T, access iwarp.Access) (*endpoint, *iwarp.MR, []byte) {
		ep := newEndpoint(t)
		buf := make([]byte, 16)
		mr, err := ep.pd.RegisterMemory(buf, access)
		if err != nil {
			t.Fatal(err)
		}
		return ep, mr, buf
	}
	// readInto posts a 16-byte Read into sink and returns the peer and the
	// Read Request it received.
	readInto := func(t *testing.T, ep *endpoint, sink *iwarp.MR) (*scriptedPeer, wire.ReadRequest) {
		p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
		if err := ep.qp.PostSend(iwarp.SendWR{ID: 1, Op: iwarp.OpRead, Flags: iwarp.Signaled, SGL: []iwarp.SGE{sink.SGE(0, 16)}, Remote: iwarp.RemoteBuffer{STag: 0x5500, Len: 16}}); err != nil {
			t.Fatal(err)
		}
		return p, p.nextOf(t, wire.OpReadRequest).ReadRequest
	}
	// respondAndCheck sends the Read Response and checks the Read.
	respondAndCheck := func(t *testing.T, ep *endpoint, p *scriptedPeer, rr wire.ReadRequest, buf []byte) {
		p.send(t, conform.Tagged(p.rv, wire.OpReadResponse, true, rr.SinkSTag, rr.SinkTO, payload))
		checkUntouched(t, nextCompletion(t, ep, "the Read"), buf)
	}
	t.Run("Read-sink-deregistered", func(t *testing.T) {
		ep, sink, buf := setup(t, iwarp.AccessLocalWrite)
		defer closeWithin(t, ep)
		p, rr := readInto(t, ep, sink)
		if err := sink.Deregister(context.Background()); err != nil {
			t.Fatal(err)
		}
		respondAndCheck(t, ep, p, rr, buf)
	})
	t.Run("Read-sink-invalidated-by-peer", func(t *testing.T) {
		ep, sink, buf := setup(t, iwarp.AccessLocalWrite|iwarp.AccessRemoteInvalidate)
		defer closeWithin(t, ep)
		postRecv(t, ep, 7)
		p, rr := readInto(t, ep, sink)
		p.send(t, sendInvalidate(p, sink.STag(), nil))
		if c := nextCompletion(t, ep, "the Send with Invalidate"); c.ID != 7 || c.Invalidated != sink.STag() {
			t.Fatalf("completion %+v, want receive 7 invalidating the sink", c)
		}
		respondAndCheck(t, ep, p, rr, buf)
	})
	t.Run("Send-into-deregistered-receive", func(t *testing.T) {
		ep, rb, buf := setup(t, iwarp.AccessLocalWrite)
		defer closeWithin(t, ep)
		if err := ep.qp.PostRecv(iwarp.RecvWR{ID: 7, SGL: []iwarp.SGE{rb.SGE(0, 16)}}); err != nil {
			t.Fatal(err)
		}
		p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
		if err := rb.Deregister(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.send(t, conform.Untagged(p.rv, wire.OpSend, true, wire.QNSend, p.nextMSN(wire.QNSend), 0, payload))
		checkUntouched(t, nextCompletion(t, ep, "the receive"), buf)
	})
}

// checkUntouched checks that the work request c, whose memory buf was
// deregistered or invalidated, did not complete with success and did not
// write buf.
func checkUntouched(t *testing.T, c iwarp.Completion, buf []byte) {
	t.Helper()
	if c.Status == iwarp.StatusSuccess {
		t.Errorf("the work request completed with success: %+v", c)
	}
	if !bytes.Equal(buf, make([]byte, len(buf))) {
		t.Errorf("bytes landed after Deregister returned: %q", buf)
	}
}

// sendInvalidate is a one-segment Send with Invalidate of stag carrying
// payload, with the peer's next Send MSN.
func sendInvalidate(p *scriptedPeer, stag uint32, payload []byte) conform.ULPDU {
	h := wire.DDPHeader{Last: true, Version: wire.DDPVersion, Control: wire.MakeRDMAPControl(p.rv, wire.OpSendInv),
		InvSTag: stag, QN: wire.QNSend, MSN: p.nextMSN(wire.QNSend)}
	hdr := wire.AppendDDPHeader(nil, &h)
	return conform.ULPDU{Bytes: append(hdr, payload...), HdrLen: len(hdr)}
}

// TestDefect05DisconnectRacingLongPost: defect 5, Disconnect racing a
// PostSend of more work requests than one transmit batch stranded the rest
// of the send queue (nobody transmitted it once the QP was closing), and
// Disconnect never returned. Disconnect must transmit and complete all the
// posted work and return nil. Each round disconnects as soon as the first
// FPDU of the batch is on its way (the device's counter), while the poster
// is still writing the batch; the race is lost when the machine deschedules
// the test, so the rounds go on until one stalls.
func TestDefect05DisconnectRacingLongPost(t *testing.T) {
	const (
		rounds = 100
		wrs    = 150 // more than two transmit batches of 64
	)
	for round := 0; round < rounds; round++ {
		deep := func(c *iwarp.QPConfig) { c.SendQueueDepth = 192 }
		a, b := connect(t, endpointWith(t, deep), endpointWith(t, deep), nil, nil)
		// 1 KiB Writes: the poster's first batch (64 of them) takes a
		// while to write.
		dst, _ := b.pd.RegisterMemory(make([]byte, 1024), iwarp.AccessRemoteWrite)
		src, _ := a.pd.RegisterMemory(make([]byte, 1024), 0)
		batch := make([]iwarp.SendWR, wrs)
		for i := range batch {
			batch[i] = iwarp.SendWR{ID: uint64(i), Op: iwarp.OpWrite, Flags: iwarp.Signaled, SGL: []iwarp.SGE{src.SGE(0, 1024)}, Remote: dst.Remote()}
		}
		before := a.dev.Stats().FPDUsSent
		// The poster runs on another processor before it posts (no
		// Gosched here), so that the test sees its first FPDU at once.
		var ready, fire atomic.Bool
		posted := make(chan error, 1)
		go func() {
			ready.Store(true)
			for !fire.Load() {
			}
			posted <- a.qp.PostSend(batch...)
		}()
		for !ready.Load() {
		}
		fire.Store(true)
		deadline := time.Now().Add(defectWait)
		for a.dev.Stats().FPDUsSent == before {
			if time.Now().After(deadline) {
				t.Fatal("nothing of the batch was sent")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := a.qp.Disconnect(ctx)
		cancel()
		if perr := <-posted; perr != nil {
			t.Fatalf("round %d: PostSend: %v", round, perr)
		}
		if err != nil {
			t.Fatalf("round %d: Disconnect: %v (posted work stranded: %d FPDUs of %d Writes sent)", round, err, a.dev.Stats().FPDUsSent-before, wrs)
		}
		closeWithin(t, a)
		closeWithin(t, b)
	}
}

// TestDefect06DisconnectRacingTeardown: defect 6, Disconnect and the
// teardown raced for the transmit role and the loser waited forever: the
// peer closed while Disconnect waited for a transmitter blocked on it, or
// the operation timeout fired meanwhile. Disconnect must return within its
// bounds, and the QP must be torn down.
func TestDefect06DisconnectRacingTeardown(t *testing.T) {
	t.Run("peer-closes", func(t *testing.T) {
		// The race is lost only when the teardown waits for the
		// transmitter too before it lets go: rounds until one hangs.
		for round := 0; round < 40; round++ {
			ep := endpointWith(t, func(c *iwarp.QPConfig) { c.OpTimeout = -1 })
			p, _ := peerReadsBig(t, ep, iwarp.AccessRemoteRead)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			disconnected := make(chan error, 1)
			go func() { disconnected <- ep.qp.Disconnect(ctx) }()
			waitState(t, ep, iwarp.StateClosing)
			p.nc.Close() // the peer dies while Disconnect waits
			select {
			case <-ep.qp.Done():
			case <-time.After(defectWait):
				cancel()
				t.Fatalf("round %d: the QP is never torn down after the peer closed (state %v)", round, ep.qp.State())
			}
			select {
			case <-disconnected:
			case <-time.After(defectWait):
				cancel()
				t.Fatalf("round %d: Disconnect never returned although the QP was torn down", round)
			}
			cancel()
			closeWithin(t, ep)
		}
	})
	t.Run("op-timeout", func(t *testing.T) {
		const opTimeout = time.Second
		for round := 0; round < 5; round++ {
			ep := endpointWith(t, func(c *iwarp.QPConfig) { c.OpTimeout = opTimeout })
			p, _ := peerReadsBig(t, ep, iwarp.AccessRemoteRead)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			returned := returnsWithin(opTimeout+defectWait, func() { _ = ep.qp.Disconnect(ctx) })
			cancel()
			if !returned {
				t.Fatalf("round %d: Disconnect (context 500 ms, operation timeout %v) has not returned after %v (state %v)", round, opTimeout, opTimeout+defectWait, ep.qp.State())
			}
			p.nc.Close()
			closeWithin(t, ep)
		}
	})
}

// waitState waits until ep's QP is in state s, at most defectWait.
func waitState(t *testing.T, ep *endpoint, s iwarp.QPState) {
	t.Helper()
	deadline := time.Now().Add(defectWait)
	for ep.qp.State() != s {
		if time.Now().After(deadline) {
			t.Fatalf("QP in state %v, want %v", ep.qp.State(), s)
		}
		select {
		case <-ep.qp.Done():
			t.Fatalf("QP torn down (%v) before reaching %v", ep.qp.Err(), s)
		default:
			runtime.Gosched()
		}
	}
}

// TestDefect07DisconnectHonoursContext: defect 7, Disconnect ignored its
// context while the transmit goroutine was blocked on a peer that does not
// read (operation timeout off), and in state TERMINATE, where it waited
// for the whole teardown drain. Disconnect must return soon after its
// context ends.
func TestDefect07DisconnectHonoursContext(t *testing.T) {
	t.Run("peer-not-reading", func(t *testing.T) {
		ep := endpointWith(t, func(c *iwarp.QPConfig) { c.OpTimeout = -1 })
		p, _ := peerReadsBig(t, ep, iwarp.AccessRemoteRead)
		defer p.nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		if !returnsWithin(defectWait, func() { _ = ep.qp.Disconnect(ctx) }) {
			t.Fatalf("Disconnect (context 500 ms) has not returned after %v (state %v)", defectWait, ep.qp.State())
		}
		p.nc.Close()
		closeWithin(t, ep)
	})
	t.Run("terminate", func(t *testing.T) {
		ep := newEndpoint(t)
		p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
		defer p.nc.Close()
		// No receive is posted: the Send is Terminate DDP/2/0x02. The peer
		// reads the Terminate and keeps its side open.
		p.send(t, conform.Untagged(p.rv, wire.OpSend, true, wire.QNSend, p.nextMSN(wire.QNSend), 0, []byte("no receive")))
		for {
			_, u, err := p.next()
			if err != nil {
				t.Fatalf("no Terminate: %v", err)
			}
			if u.Opcode == wire.OpTerminate {
				break
			}
		}
		if s := ep.qp.State(); s != iwarp.StateTerminate {
			t.Fatalf("state %v, want %v", s, iwarp.StateTerminate)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		if !returnsWithin(time.Second, func() { _ = ep.qp.Disconnect(ctx) }) {
			t.Errorf("Disconnect (context 50 ms) in TERMINATE has not returned after 1 s")
		}
		t.Logf("Disconnect returned or was abandoned after %v", time.Since(start).Round(time.Millisecond))
		p.nc.Close()
		closeWithin(t, ep)
	})
}

// TestDefect12ResponderStall: defect 12, after the responder's application
// waited on its CQ (the receive role was lent to it), what the peer sent
// next waited up to the receive goroutine's 10 ms backstop unread: a
// 1-byte Read right after the responder's CQ.Next returned took about
// 10.6 ms instead of about 40 µs. No received byte may wait on a timer.
// The median of such Reads must stay far below the backstop.
func TestDefect12ResponderStall(t *testing.T) {
	const (
		rounds = 21
		bound  = 3 * time.Millisecond // the stall is 10 ms; a healthy Read is ~0.1 ms
	)
	a, b := connectPair(t, nil, nil)
	region, _ := b.pd.RegisterMemory(make([]byte, 64), iwarp.AccessRemoteRead)
	remote, _ := region.RemoteSlice(0, 1)
	sink, _ := a.pd.RegisterMemory(make([]byte, 1), iwarp.AccessLocalWrite)
	ctx, cancel := context.WithTimeout(context.Background(), defectWait)
	defer cancel()
	var took []time.Duration
	for round := 0; round < rounds; round++ {
		if err := b.qp.PostRecv(iwarp.RecvWR{ID: uint64(round)}); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() { _, err := b.cq.Next(ctx); got <- err }() // the responder waits on its CQ
		if err := a.qp.Send(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := a.qp.Read(ctx, remote, sink.SGE(0, 1)); err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	if median := took[rounds/2]; median > bound {
		t.Errorf("a 1-byte Read right after the responder's CQ wait: median %v over %d rounds (min %v, max %v), want under %v", median, rounds, took[0], took[rounds-1], bound)
	}
}

// TestDefect13ReadThenAtomic: defect 13, docs/extensions.md promises the
// results of a sequential execution for Reads and atomics outstanding
// together, but the responder ran an atomic before the Read Response
// posted before it was sourced: a 32 MiB Read returned a word that a later
// FetchAdd had already changed (RFC 7306 §7, "RDMA Read → Atomic"). This
// test holds the stack to the promise; if the rebuild withdraws it and
// documents the Fence flag instead, the test changes with the docs.
func TestDefect13ReadThenAtomic(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	src := alignedBuf(bigRead)
	binary.NativeEndian.PutUint64(src[bigRead-8:], 1000) // before registration
	region, err := b.pd.RegisterMemory(src, iwarp.AccessRemoteRead|iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := region.RemoteSlice(bigRead-8, 8)
	sink, _ := a.pd.RegisterMemory(make([]byte, bigRead), iwarp.AccessLocalWrite)
	if err := a.qp.PostSend(
		iwarp.SendWR{ID: 1, Op: iwarp.OpRead, Flags: iwarp.Signaled, SGL: []iwarp.SGE{sink.SGE(0, bigRead)}, Remote: region.Remote()},
		iwarp.SendWR{ID: 2, Op: iwarp.OpFetchAdd, Flags: iwarp.Signaled, Remote: last, Add: 1},
	); err != nil {
		t.Fatal(err)
	}
	read := nextCompletion(t, a, "the Read")
	add := nextCompletion(t, a, "the FetchAdd")
	if read.ID != 1 || read.Status != iwarp.StatusSuccess || add.ID != 2 || add.Status != iwarp.StatusSuccess {
		t.Fatalf("completions %+v, %+v", read, add)
	}
	if got := binary.NativeEndian.Uint64(sink.Bytes()[bigRead-8:]); got != add.Original || got != 1000 {
		t.Errorf("the Read (posted first) returned %d, the FetchAdd (posted after it) found %d: want 1000 for both", got, add.Original)
	}
}
