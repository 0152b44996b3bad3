package verbs

import (
	"bytes"
	"context"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
)

// TestSendRecv: a Send lands in the peer's posted receive.
func TestSendRecv(t *testing.T) {
	for _, noPoll := range []bool{false, true} {
		o := defaultOpts()
		o.noPoll = noPoll
		a, b := pair(t, o, o)
		rb := make([]byte, 64)
		b.postRecv(t, rdmap.RecvWR{ID: 7, SGL: []rdmap.SGE{whole(b.register(t, rb, mem.AccessLocalWrite))}})
		src := a.register(t, []byte("hello, verbs"), 0)
		a.post(t, rdmap.SendWR{ID: 1, Op: rdmap.OpSend, Flags: rdmap.Signaled, SGL: []rdmap.SGE{whole(src)}})
		a.want(t, 1, rdmap.StatusSuccess)
		c := b.want(t, 7, rdmap.StatusSuccess)
		if c.Len != 12 || !bytes.Equal(rb[:12], []byte("hello, verbs")) {
			t.Fatalf("noPoll %v: received %d bytes %q", noPoll, c.Len, rb[:c.Len])
		}
	}
}

// TestWriteReadAtomic: a Write, a Read and a FetchAdd end to end.
func TestWriteReadAtomic(t *testing.T) {
	a, b := defaultPair(t)
	target := make([]byte, 4096)
	tr := b.register(t, target, mem.AccessRemoteWrite|mem.AccessRemoteRead|mem.AccessRemoteAtomic)
	src := bytes.Repeat([]byte{0xab}, 4096)
	sr := a.register(t, src, 0)
	a.post(t, rdmap.SendWR{ID: 1, Op: rdmap.OpWrite, Flags: rdmap.Signaled, SGL: []rdmap.SGE{whole(sr)},
		RemoteSTag: uint32(tr.STag()), RemoteTO: tr.Base()})
	a.want(t, 1, rdmap.StatusSuccess)
	sink := make([]byte, 4096)
	sk := a.register(t, sink, mem.AccessLocalWrite)
	c, err := a.qp.Do(context.Background(), rdmap.SendWR{ID: 2, Op: rdmap.OpRead, SGL: []rdmap.SGE{whole(sk)},
		RemoteSTag: uint32(tr.STag()), RemoteTO: tr.Base()})
	if err != nil || c.Status != rdmap.StatusSuccess {
		t.Fatalf("Read: %+v, %v", c, err)
	}
	if !bytes.Equal(sink, src) {
		t.Fatal("the Read did not return what the Write wrote")
	}
	// The target is the responder's memory, changed by its goroutines:
	// the test uses the local atomic accessors on it.
	tr.AtomicCmpSwap(tr.Base()+8, 0, 0, 41, ^uint64(0))
	c, err = a.qp.Do(context.Background(), rdmap.SendWR{ID: 3, Op: rdmap.OpFetchAdd, RemoteSTag: uint32(tr.STag()), RemoteTO: tr.Base() + 8, Data: 1})
	if err != nil || c.Status != rdmap.StatusSuccess || c.Original != 41 {
		t.Fatalf("FetchAdd: %+v, %v", c, err)
	}
	if v := tr.AtomicLoad(tr.Base() + 8); v != 42 {
		t.Fatalf("FetchAdd left %d, want 42", v)
	}
}
