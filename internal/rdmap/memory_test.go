package rdmap

import (
	"bytes"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// The memory rules (docs/engine-rebuild.md, "Memory: transient pins,
// leases, generations") and the review's defects 1, 2 and 3.

// zero reports whether b holds only zeros.
func zero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// wantLocalProtection checks that the core failed a WR with a local
// protection error and went to ERROR.
func wantLocalProtection(t *testing.T, c *Core, q Queue, id uint64) {
	t.Helper()
	got := poll(c)
	if len(got) == 0 || got[0].Queue != q || got[0].ID != id || got[0].Status != rdma.StatusLocalProtection || !errors.Is(got[0].Err, ErrLocalProtection) {
		t.Fatalf("completions %+v: want %d failed with a local protection error first", got, id)
	}
	if c.State() != rdma.StateError || c.Err() != ErrLocalProtection || !c.WantClose() {
		t.Fatalf("state %v, error %v", c.State(), c.Err())
	}
}

// TestDefect03NoPlacementAfterDeregister: once a Read sink or a receive
// buffer was deregistered or invalidated (the Begin returned), no byte
// lands in it and its WR completes with a local protection error.
func TestDefect03NoPlacementAfterDeregister(t *testing.T) {
	payload := []byte("AFTER-DEREGISTER")
	setup := func(t *testing.T) (*Core, *peer, *mem.Table, *mem.Region) {
		o := defaults()
		table := mem.NewTable(mem.TableOptions{})
		c := newCore(t, table, o)
		buf := region(t, table, testPD, 16, 0, mem.AccessLocalWrite|mem.AccessRemoteInvalidate)
		return c, newPeer(t, o), table, buf
	}
	readInto := func(t *testing.T, c *Core, p *peer, sink *mem.Region) []byte {
		post(t, c, SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(sink)}, Remote: rdma.RemoteBuffer{STag: 0x5500}})
		rr := p.recv(txAll(c))[0]
		return cat(tagged(2, true, be32(rr[18:]), be64(rr[22:])), payload)
	}
	t.Run("Read-sink-deregistered", func(t *testing.T) {
		c, p, table, sink := setup(t)
		resp := readInto(t, c, p, sink)
		if !table.BeginDeregister(sink).Drained() {
			t.Fatal("a posted Read pins its sink")
		}
		rxAll(c, p.frame(resp), 5)
		wantLocalProtection(t, c, SendQueue, 1)
		if !zero(sink.Bytes()) {
			t.Fatalf("bytes landed after Deregister: %q", sink.Bytes())
		}
	})
	t.Run("Read-sink-invalidated-by-peer", func(t *testing.T) {
		c, p, _, sink := setup(t)
		if _, err := c.PostRecv([]RecvWR{{ID: 7}}); err != nil {
			t.Fatal(err)
		}
		resp := readInto(t, c, p, sink)
		rxAll(c, p.frame(cat(untagged(4, true, stagOf(sink), 0, 1, 0))), 5)
		if got := poll(c); len(got) != 1 || got[0].ID != 7 || got[0].Invalidated != stagOf(sink) || got[0].Solicited || got[0].HasImmediate {
			t.Fatalf("completions %+v: want receive 7 invalidating the sink", got)
		}
		rxAll(c, p.frame(resp), 5)
		wantLocalProtection(t, c, SendQueue, 1)
		if !zero(sink.Bytes()) {
			t.Fatalf("bytes landed after the invalidation: %q", sink.Bytes())
		}
	})
	t.Run("Send-into-deregistered-receive", func(t *testing.T) {
		c, p, table, rb := setup(t)
		if _, err := c.PostRecv([]RecvWR{{ID: 7, SGL: []rdma.SGE{sge(rb)}}}); err != nil {
			t.Fatal(err)
		}
		table.BeginDeregister(rb)
		rxAll(c, p.frame(cat(untagged(3, true, 0, 0, 1, 0), payload)), 5)
		wantLocalProtection(t, c, RecvQueue, 7)
		if !zero(rb.Bytes()) {
			t.Fatalf("bytes landed after Deregister: %q", rb.Bytes())
		}
	})
	t.Run("Send-spanning-SGEs-into-invalidated-receive", func(t *testing.T) {
		c, p, table, rb := setup(t)
		if _, err := c.PostRecv([]RecvWR{{ID: 7, SGL: []rdma.SGE{{STag: stagOf(rb), Length: 4}, {STag: stagOf(rb), Offset: 4, Length: 12}}}}); err != nil {
			t.Fatal(err)
		}
		table.BeginInvalidate(rb, rb.STag())
		rxAll(c, p.frame(cat(untagged(3, true, 0, 0, 1, 0), payload)), 5)
		wantLocalProtection(t, c, RecvQueue, 7)
		if !zero(rb.Bytes()) {
			t.Fatalf("bytes landed after the invalidation: %q", rb.Bytes())
		}
	})
	t.Run("Immediate-into-deregistered-receive", func(t *testing.T) {
		c, p, table, rb := setup(t)
		if _, err := c.PostRecv([]RecvWR{{ID: 7, SGL: []rdma.SGE{sge(rb)}}}); err != nil {
			t.Fatal(err)
		}
		table.BeginDeregister(rb)
		rxAll(c, p.frame(cat(untagged(8, true, 0, 0, 1, 0), payload[:8])), 5)
		wantLocalProtection(t, c, RecvQueue, 7)
		if !zero(rb.Bytes()) {
			t.Fatalf("bytes landed after Deregister: %q", rb.Bytes())
		}
	})
	t.Run("atomic-result-deregistered", func(t *testing.T) {
		c, p, table, res := setup(t)
		post(t, c, SendWR{ID: 1, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(res), Length: 8}}, Remote: rdma.RemoteBuffer{STag: 9}})
		p.recv(txAll(c))
		table.BeginDeregister(res)
		rxAll(c, p.frame(cat(untagged(0xB, true, 0, 3, 1, 0), make([]byte, 4), []byte{0, 0, 0, 0, 0, 0, 0, 42})), 5)
		wantLocalProtection(t, c, SendQueue, 1)
		if !zero(res.Bytes()) {
			t.Fatalf("result written after Deregister: %x", res.Bytes())
		}
	})
	t.Run("Send-source-deregistered", func(t *testing.T) {
		for _, n := range []int{16, 64 << 10} { // copied, leased
			c, p, table, _ := setup(t)
			src := region(t, table, testPD, n, 's', 0)
			post(t, c, SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}})
			table.BeginDeregister(src)
			if got := p.recv(txAll(c)); len(got) != 0 {
				t.Fatalf("%d bytes: sent %d FPDUs from a deregistered source", n, len(got))
			}
			wantLocalProtection(t, c, SendQueue, 1)
		}
	})
}

// TestWriteTargetInvalidatedMidSegment: a Write's target is pinned for
// each read into it, not across reads: deregistered between two reads of
// one segment, the rest is refused (Terminate DDP/1/0x00) and no byte
// lands after the Begin.
func TestWriteTargetInvalidatedMidSegment(t *testing.T) {
	o := defaults()
	e := newTermEnv(t, o)
	target := region(t, e.table, testPD, 1000, 0, mem.AccessRemoteWrite)
	bad := cat(tagged(0, true, stagOf(target), target.Base()), bytes.Repeat([]byte{'w'}, 1000))
	stream := e.p.frame(bad)
	took := rxAll(e.c, stream[:500], 100)
	inv := e.table.BeginDeregister(target)
	if !inv.Drained() {
		t.Fatal("a Write target pinned between reads")
	}
	before := append([]byte(nil), target.Bytes()...)
	rxAll(e.c, stream[took:], 100)
	if !bytes.Equal(before, target.Bytes()) {
		t.Fatal("bytes landed after the deregistration began")
	}
	got := e.p.recv(txAll(e.c))
	if want := termULPDU(rdma.TermDDPInvalidSTag, bad, 14, false); len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Fatalf("sent %x\nwant the Terminate % x", got, want)
	}
}

// TestRxBufPinsTheRead: while a buffer handed out by RxBuf is inside a
// Read sink, the sink is pinned: its deregistration drains only at
// RxDone; Close meanwhile withholds the flush until then.
func TestRxBufPinsTheRead(t *testing.T) {
	o := defaults()
	c, p, table := single(t, o)
	sink := region(t, table, testPD, 4000, 0, mem.AccessLocalWrite)
	post(t, c, SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(sink), Length: 1000}}, Remote: rdma.RemoteBuffer{STag: 9}})
	rr := p.recv(txAll(c))[0]
	stream := p.frame(cat(tagged(2, true, be32(rr[18:]), be64(rr[22:])), bytes.Repeat([]byte{'r'}, 1000)))
	rxAll(c, stream[:100], 100)
	b := c.RxBuf()
	if !within(b, sink.Bytes()) {
		t.Fatal("the payload is not read straight into the sink")
	}
	inv := table.BeginDeregister(sink)
	c.Close()
	if inv.Drained() || len(poll(c)) != 0 {
		t.Fatal("the sink was not pinned for the read in progress, or the flush did not wait for it")
	}
	c.RxDone(copy(b, stream[100:]))
	if !inv.Drained() {
		t.Fatal("RxDone did not unpin the sink")
	}
	wantComps(t, poll(c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1, Status: rdma.StatusFlushed}})
}

// TestDefect01LocalInvalidateBehindReadResponse: a Local Invalidate of a
// region whose Read Response is queued for the socket completes once the
// response was written, without anything waiting; Wake tells the shell.
func TestDefect01LocalInvalidateBehindReadResponse(t *testing.T) {
	for _, crc := range []bool{false, true} {
		o := defaults()
		o.framing.CRC = crc
		woken := 0
		o.wake = func() { woken++ }
		c, p, table := single(t, o)
		x := region(t, table, testPD, 64<<10, 3, mem.AccessRemoteRead)
		rxAll(c, p.frame(cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x6600, 0, 64<<10, stagOf(x), x.Base()))), 1<<20)
		bufs := c.TxBufs(nil) // the response, referenced or copied, not yet written
		post(t, c, SendWR{ID: 2, Op: rdma.OpLocalInvalidate, Flags: rdma.Signaled, InvalidateSTag: stagOf(x)})
		total := 0
		for _, b := range bufs {
			total += len(b)
		}
		c.TxDone(total / 2)
		c.TxBufs(nil) // runs the Local Invalidate
		if x.Valid() {
			t.Fatal("the Local Invalidate did not begin at once")
		}
		got := poll(c)
		if len(got) != 0 && !crc {
			t.Fatalf("CRC off: the invalidation completed while the response's source is referenced: %+v", got)
		}
		txAll(c)
		if crc {
			got = append(got, poll(c)...)
		} else {
			got = poll(c)
		}
		wantComps(t, got, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
		if !crc && woken != 1 {
			t.Fatalf("Wake ran %d times", woken)
		}
	}
}

// TestDefect02SendInvalidateWhileResponseLeased: the peer Reads a large
// region x, sends a Send with Invalidate naming x and stops reading: x is
// invalid at once, the receive completion waits for the response's lease,
// nothing blocks; when the shell gives up (Fail), the lease ends and the
// receive completes once.
func TestDefect02SendInvalidateWhileResponseLeased(t *testing.T) {
	o := defaults()
	o.framing.CRC = false
	c, p, table := single(t, o)
	x := region(t, table, testPD, 1<<20, 1, mem.AccessRemoteRead|mem.AccessRemoteInvalidate)
	if _, err := c.PostRecv([]RecvWR{{ID: 7}}); err != nil {
		t.Fatal(err)
	}
	rxAll(c, p.frame(cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x5500, 0, 1<<20, stagOf(x), x.Base()))), 1<<20)
	bufs := c.TxBufs(nil)
	c.TxDone(len(bufs[0])) // the peer reads a little, then stops
	rxAll(c, p.frame(untagged(4, true, stagOf(x), 0, 1, 0)), 1<<20)
	if x.Valid() {
		t.Fatal("the Send with Invalidate did not invalidate at once")
	}
	if got := poll(c); len(got) != 0 {
		t.Fatalf("the receive completed while the response's lease is held: %+v", got)
	}
	c.TxBufs(nil) // the shell tries to write; the peer does not read
	if !c.Waiting() {
		t.Fatal("not waiting on the peer")
	}
	c.Fail(errors.New("operation timeout"))
	if got := poll(c); len(got) != 0 {
		t.Fatal("completions while the write is in progress")
	}
	c.TxDone(0)
	got := poll(c)
	wantComps(t, got, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 7}})
	if got[0].Invalidated == 0 || got[0].Solicited || got[0].HasImmediate {
		t.Fatalf("receive %+v", got[0])
	}
}

// holder records revocations: a shell's mem.Holder.
type holder struct {
	c       *Core
	revoked int
}

func (h *holder) Revoke(r *mem.Region) { h.revoked++; h.c.Revoke(r) }

// TestRevoke: an invalidation that cannot wait for a Read Response's lease
// revokes it: the core fails, and the lease ends once the write in
// progress returned.
func TestRevoke(t *testing.T) {
	o := defaults()
	o.framing.CRC = false
	table := mem.NewTable(mem.TableOptions{})
	h := &holder{}
	c, err := New(Config{Table: table, PD: testPD, SQDepth: 4, RQDepth: 4, MaxSGE: 1, Holder: h, Framing: o.framing, Params: Params{IRD: 1}})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	p := newPeer(t, o)
	x := region(t, table, testPD, 1<<20, 1, mem.AccessRemoteRead)
	rxAll(c, p.frame(cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x5500, 0, 1<<20, stagOf(x), x.Base()))), 1<<20)
	c.TxBufs(nil)
	inv := table.BeginDeregister(x)
	if n := inv.Revoke(); n != 1 || h.revoked != 1 {
		t.Fatalf("revoked %d holders (%d calls)", n, h.revoked)
	}
	if c.State() != rdma.StateError || !errors.Is(c.Err(), ErrLeaseRevoked) || !c.WantClose() {
		t.Fatalf("after the revocation: %v %v", c.State(), c.Err())
	}
	if inv.Drained() {
		t.Fatal("the lease ended while the write may still read the region")
	}
	c.TxDone(0)
	if !inv.Drained() {
		t.Fatal("the lease did not end after the write returned")
	}
}

// TestLeasedSendSurvivesDeregistration: a large Send whose first FPDU was
// handed out leases its source: a deregistration begun meanwhile waits for
// it, the message completes whole, and the drain comes once its last octet
// was written.
func TestLeasedSendSurvivesDeregistration(t *testing.T) {
	c, p, table := single(t, defaults())
	src := region(t, table, testPD, 100<<10, 'L', 0)
	post(t, c, SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}})
	first := append([]byte(nil), c.TxBufs(nil)[0]...)
	c.TxDone(len(first))
	inv := table.BeginDeregister(src)
	if inv.Drained() {
		t.Fatal("the Send's source was not leased")
	}
	got := p.recv(append(first, txAll(c)...))
	if !inv.Drained() || c.State() != rdma.StateRTS {
		t.Fatalf("drained %v after the last octet; state %v (%v)", inv.Drained(), c.State(), c.Err())
	}
	var payload []byte
	for _, u := range got {
		payload = append(payload, u[18:]...)
	}
	if !bytes.Equal(payload, src.Bytes()) {
		t.Fatalf("sent %d payload octets, not the source's", len(payload))
	}
	wantComps(t, poll(c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}})
}

// TestLocalInvalidateRefused: a Local Invalidate naming an STag it may not
// invalidate completes with a local protection error; the QP carries on.
func TestLocalInvalidateRefused(t *testing.T) {
	c, _, table := single(t, defaults())
	other := region(t, table, testPD+1, 8, 0, 0)
	post(t, c, SendWR{ID: 1, Op: rdma.OpLocalInvalidate, InvalidateSTag: stagOf(other)}, SendWR{ID: 2, Op: rdma.OpLocalInvalidate, InvalidateSTag: 0x123456}, SendWR{ID: 3, Op: rdma.OpSend, Flags: rdma.Signaled})
	txAll(c)
	got := poll(c)
	wantComps(t, got, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1, Status: rdma.StatusLocalProtection}},
		Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2, Status: rdma.StatusLocalProtection}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 3}})
	if !errors.Is(got[0].Err, ErrLocalInvalidate) || c.State() != rdma.StateRTS || !other.Valid() {
		t.Fatalf("%v; state %v", got[0].Err, c.State())
	}
}

// TestTerminateCutsMessage: a violation found while a large Write is
// being sent: the Terminate follows the FPDUs already queued (at an FPDU
// boundary, not after the whole message); the Write is flushed and its
// lease ends once those octets were written.
func TestTerminateCutsMessage(t *testing.T) {
	c, p, table := single(t, defaults())
	src := region(t, table, testPD, 4<<20, 'w', 0)
	post(t, c, SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}, Remote: rdma.RemoteBuffer{STag: 9}})
	bufs := c.TxBufs(nil)
	queued := 0
	for _, b := range bufs {
		queued += len(b)
	}
	c.TxDone(0)
	bad := cat(untagged(3, true, 0, 0, 1, 0), []byte("no receive"))
	rxAll(c, p.frame(bad), 100)
	inv := table.BeginDeregister(src)
	got := p.recv(txAll(c))
	term := got[len(got)-1]
	if want := termULPDU(rdma.TermDDPNoBuffer, bad, 18, false); !bytes.Equal(term, want) {
		t.Fatalf("last FPDU % x, want the Terminate", term[:20])
	}
	sent := 0
	for _, u := range got[:len(got)-1] {
		sent += len(u) - 14
	}
	if sent >= 4<<20 || sent > queued {
		t.Fatalf("%d octets of the Write went before the Terminate (%d were queued when it was decided)", sent, queued)
	}
	if !inv.Drained() {
		t.Fatal("the cut Write's lease did not end once its octets were written")
	}
	c.RxEOF(nil)
	wantComps(t, poll(c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1, Status: rdma.StatusFlushed}})
}

// TestNoByteAfterDrain: a deregistration begun at any point of a Read
// Response's arrival, with or without markers (whose staging carries
// payload into the sink as it is consumed), either drains only after the
// last byte placed, or drains at once and nothing more lands.
func TestNoByteAfterDrain(t *testing.T) {
	for _, markers := range []bool{false, true} {
		o := defaults()
		o.framing.RecvMarkers, o.framing.SendMarkers = markers, markers
		resp := func(c *Core, p *peer, sink *mem.Region) []byte {
			post(t, c, SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(sink), Length: 2000}}, Remote: rdma.RemoteBuffer{STag: 9}})
			rr := p.recv(txAll(c))[0]
			return p.frame(cat(tagged(2, true, be32(rr[18:]), be64(rr[22:])), bytes.Repeat([]byte{'r'}, 2000)))
		}
		// The same registrations in every run: a table with fixed keys.
		det := func() (*Core, *peer, *mem.Table, *mem.Region) {
			n := uint32(0)
			table := mem.NewTable(mem.TableOptions{Random: func() uint32 { n++; return n }})
			sink := region(t, table, testPD, 2000, 0, mem.AccessLocalWrite)
			return newCore(t, table, o), newPeer(t, o), table, sink
		}
		c, p, _, sink := det()
		stream := resp(c, p, sink)
		for k := range len(stream) {
			c, p, table, sink := det()
			if s := resp(c, p, sink); !bytes.Equal(s, stream) {
				t.Fatal("streams differ")
			}
			rxAll(c, stream[:k], 64)
			b := c.RxBuf() // a read in progress when the deregistration begins
			inv := table.BeginDeregister(sink)
			drained := inv.Drained()
			before := append([]byte(nil), sink.Bytes()...)
			n := copy(b, stream[k:])
			c.RxDone(n)
			rxAll(c, stream[k+n:], 64)
			if drained && !bytes.Equal(before, sink.Bytes()) {
				t.Fatalf("markers %v, split at %d: bytes landed after the deregistration drained", markers, k)
			}
			if !inv.Drained() {
				t.Fatalf("markers %v, split at %d: not drained at the end", markers, k)
			}
		}
	}
}

// otherQP is a lease holder that is not the Core under test: another QP
// whose peer does not read.
type otherQP struct{ revoked int }

func (o *otherQP) Revoke(*mem.Region) { o.revoked++ }

// TestCloseStopsWaitingForAnotherQPsLease: a received Send with Invalidate
// waits for the invalidation to drain, and another QP's lease holds it up;
// once this QP is closed and its own buffers are released it does not wait
// for that other QP's peer: the receive completes as flushed (review 2,
// finding 1), and the invalidation goes on.
func TestCloseStopsWaitingForAnotherQPsLease(t *testing.T) {
	c, p, table := single(t, defaults())
	x := region(t, table, testPD, 4096, 1, mem.AccessRemoteRead|mem.AccessRemoteInvalidate)
	other := &otherQP{}
	if !x.Lease(x.Gen(), other) {
		t.Fatal("lease")
	}
	g := x.Gen()
	if _, err := c.PostRecv([]RecvWR{{ID: 7}, {ID: 8}}); err != nil {
		t.Fatal(err)
	}
	rxAll(c, p.frame(untagged(4, true, stagOf(x), 0, 1, 0)), 1<<20)
	if got := poll(c); len(got) != 0 {
		t.Fatalf("the receive completed while another QP's lease holds the invalidation: %+v", got)
	}
	c.Close()
	got := poll(c)
	wantComps(t, got, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 7, Status: rdma.StatusFlushed}}, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 8, Status: rdma.StatusFlushed}})
	if got[0].Solicited || got[0].Invalidated != 0 || got[0].HasImmediate {
		t.Fatalf("after Close: %+v, want a plain flushed completion", got[0])
	}
	if x.Valid() {
		t.Fatal("the invalidation was undone")
	}
	x.EndLease(g, other)
	if got := poll(c); len(got) != 0 {
		t.Fatalf("completions after the lease ended: %+v (each WR completes once)", got)
	}
}
