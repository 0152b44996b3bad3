package rdmap

import (
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// closeEnv is a core with work in every phase: a Send written, a Read
// awaiting its response, Sends not yet started, and receives posted.
func closeEnv(t *testing.T) (*Core, *peer, *mem.Table) {
	o := defaults()
	c, p, table := single(t, o)
	buf := region(t, table, testPD, 256, 0, mem.AccessLocalWrite)
	if _, err := c.PostRecv([]RecvWR{{ID: 10, SGL: []rdma.SGE{sge(buf)}}, {ID: 11}}); err != nil {
		t.Fatal(err)
	}
	post(t, c,
		SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled},
		SendWR{ID: 2, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(buf), Length: 8}}, Remote: rdma.RemoteBuffer{STag: 9}})
	p.recv(txAll(c))
	post(t, c, SendWR{ID: 3, Op: rdma.OpSend}, SendWR{ID: 4, Op: rdma.OpWrite, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: 9}})
	return c, p, table
}

// TestCloseFlushesOnceInOrder: Close completes every WR not complete, in
// posting order, exactly once; a second Close or Fail adds nothing;
// posting is refused afterwards with the QP's state and error.
func TestCloseFlushesOnceInOrder(t *testing.T) {
	c, _, _ := closeEnv(t)
	wantComps(t, poll(c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}})
	c.Close()
	got := poll(c)
	wantComps(t, got,
		Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2, Status: rdma.StatusFlushed}},
		Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 3, Status: rdma.StatusFlushed}},
		Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 4, Status: rdma.StatusFlushed}},
		Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 10, Status: rdma.StatusFlushed}},
		Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 11, Status: rdma.StatusFlushed}})
	for _, comp := range got {
		if !errors.Is(comp.Err, ErrLocallyClosed) {
			t.Fatalf("completion error %v", comp.Err)
		}
	}
	if got[1].Signaled {
		t.Fatal("an unsignaled WR reported as signaled")
	}
	c.Close()
	c.Fail(errors.New("later"))
	c.RxEOF(nil)
	if more := poll(c); len(more) != 0 {
		t.Fatalf("completed again: %+v", more)
	}
	if c.State() != rdma.StateError || !errors.Is(c.Err(), ErrLocallyClosed) || !c.WantClose() || c.Waiting() || c.WantTx() || c.RxBuf() != nil {
		t.Fatalf("after Close: %v %v", c.State(), c.Err())
	}
	if _, err := c.PostSend([]SendWR{{Op: rdma.OpSend}}); !errors.Is(err, ErrQPState) || !errors.Is(err, ErrLocallyClosed) {
		t.Fatalf("PostSend after Close: %v", err)
	}
	if _, err := c.PostRecv([]RecvWR{{}}); !errors.Is(err, ErrQPState) {
		t.Fatalf("PostRecv after Close: %v", err)
	}
}

// TestFailAndEndOfStream: Fail records a connection error; the peer's
// close (RxEOF nil) is ErrPeerDisconnected; a read error is a
// connection error. Each flushes like Close.
func TestFailAndEndOfStream(t *testing.T) {
	boom := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		end  func(c *Core)
		want func(error) bool
	}{
		{"Fail", func(c *Core) { c.Fail(boom) }, func(err error) bool {
			var ce *ConnectionError
			return errors.As(err, &ce) && errors.Is(err, boom)
		}},
		{"peer-FIN", func(c *Core) { c.RxEOF(nil) }, func(err error) bool { return err == ErrPeerDisconnected }},
		{"read-error", func(c *Core) { c.RxEOF(boom) }, func(err error) bool {
			var ce *ConnectionError
			return errors.As(err, &ce) && errors.Is(err, boom)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := closeEnv(t)
			poll(c)
			tc.end(c)
			if !tc.want(c.Err()) || c.State() != rdma.StateError {
				t.Fatalf("error %v, state %v", c.Err(), c.State())
			}
			if got := poll(c); len(got) != 5 {
				t.Fatalf("completions %+v", got)
			}
		})
	}
}

// TestSendCompletesWhenWritten: a send WR completes once the last octet of
// its last FPDU was consumed by TxDone, not before; an unsignaled one
// produces no completion, but frees its slot with a later signaled one.
func TestSendCompletesWhenWritten(t *testing.T) {
	o := defaults()
	o.sq = 3
	table := mem.NewTable(mem.TableOptions{})
	c := newCore(t, table, o)
	src := region(t, table, testPD, 3000, 's', 0)
	post(t, c, SendWR{ID: 1, Op: rdma.OpSend, SGL: []rdma.SGE{sge(src)}}, SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}})
	total := 0
	for _, b := range c.TxBufs(nil) {
		total += len(b)
	}
	c.TxDone(total - 1)
	if got := poll(c); len(got) != 0 {
		t.Fatalf("completed before the last octet: %+v", got)
	}
	if _, err := c.PostSend([]SendWR{{ID: 3, Op: rdma.OpSend}}); !errors.Is(err, ErrSQNeedsSignaled) {
		t.Fatalf("an unsignaled WR in the last slot: %v", err)
	}
	c.TxBufs(nil)
	c.TxDone(1)
	got := poll(c)
	wantComps(t, got, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
	post(t, c, SendWR{ID: 3, Op: rdma.OpSend, Flags: rdma.Signaled})
	if _, err := c.PostSend([]SendWR{{ID: 4, Op: rdma.OpSend, Flags: rdma.Signaled}}); !errors.Is(err, ErrSQFull) {
		t.Fatalf("posting before the completion was released: %v", err)
	}
	c.ReleaseSend(got[0].Slot) // frees WR 2's slot and the unsignaled WR 1's
	post(t, c, SendWR{ID: 4, Op: rdma.OpSend}, SendWR{ID: 5, Op: rdma.OpSend, Flags: rdma.Signaled})
}

// TestDisconnect: after Disconnect no WR is accepted, the posted ones and
// the peer's requests are sent and completed, then WantHalfClose; the
// peer's close moves the QP to ERROR (ErrDisconnected) and flushes the
// receives.
func TestDisconnect(t *testing.T) {
	o := defaults()
	c, p, table := single(t, o)
	sink := region(t, table, testPD, 64, 0, mem.AccessLocalWrite)
	src := region(t, table, testPD, 64, 's', mem.AccessRemoteRead)
	if _, err := c.PostRecv([]RecvWR{{ID: 10}}); err != nil {
		t.Fatal(err)
	}
	post(t, c, SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(sink)}, Remote: rdma.RemoteBuffer{STag: 9}},
		SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Signaled})
	c.Disconnect()
	if c.State() != rdma.StateClosing || c.WantHalfClose() {
		t.Fatalf("state %v, half-close %v", c.State(), c.WantHalfClose())
	}
	if _, err := c.PostSend([]SendWR{{ID: 3, Op: rdma.OpSend}}); !errors.Is(err, ErrQPState) {
		t.Fatalf("PostSend while closing: %v", err)
	}
	out := p.recv(txAll(c))
	if len(out) != 2 || c.WantHalfClose() {
		t.Fatalf("sent %d ULPDUs; half-close %v before the Read's response", len(out), c.WantHalfClose())
	}
	// The peer answers the Read and reads our source meanwhile.
	rr := out[0]
	resp := cat(tagged(2, true, be32(rr[18:]), be64(rr[22:])), make([]byte, 64))
	req := cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x77, 0, 64, stagOf(src), src.Base()))
	rxAll(c, p.frame(resp, req), 13)
	if c.WantHalfClose() {
		t.Fatal("half-close before the peer's Read was answered")
	}
	if got := p.recv(txAll(c)); len(got) != 1 || got[0][1]&0xf != 2 {
		t.Fatalf("answer %x", got)
	}
	wantComps(t, poll(c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
	if !c.WantHalfClose() || !c.Waiting() || c.WantClose() {
		t.Fatalf("half-close %v, waiting %v, close %v", c.WantHalfClose(), c.Waiting(), c.WantClose())
	}
	c.RxEOF(nil)
	if c.State() != rdma.StateError || c.Err() != ErrDisconnected || !c.WantClose() {
		t.Fatalf("after the peer's close: %v %v", c.State(), c.Err())
	}
	wantComps(t, poll(c), Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 10, Status: rdma.StatusFlushed}})
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
func be64(b []byte) uint64 { return uint64(be32(b))<<32 | uint64(be32(b[4:])) }

// TestNoOutputAfterHalfClose: once WantHalfClose has reported true after
// Disconnect, a request of the peer's that crossed the half-close is not
// answered (the octets could not be written); the peer's close then ends
// the QP.
func TestNoOutputAfterHalfClose(t *testing.T) {
	c, p, table := single(t, defaults())
	src := region(t, table, testPD, 64, 's', mem.AccessRemoteRead)
	c.Disconnect()
	if !c.WantHalfClose() {
		t.Fatal("no half-close after Disconnect with nothing to do")
	}
	rxAll(c, p.frame(cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x77, 0, 64, stagOf(src), src.Base()))), 100)
	if c.WantTx() || len(txAll(c)) != 0 || !c.WantHalfClose() {
		t.Fatal("output after the half-close")
	}
	c.RxEOF(nil)
	if c.State() != rdma.StateError || c.Err() != ErrDisconnected {
		t.Fatalf("after the peer's close: %v %v", c.State(), c.Err())
	}
	if !table.BeginDeregister(src).Drained() {
		t.Fatal("the unanswered request's lease outlived the QP")
	}
}
