package rdmap

import (
	"encoding/binary"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestDefect13ReadThenAtomic: RFC 7306 §7, "Atomic Response Message will
// not be generated until RDMA Read Response has been generated": a Read
// followed by a FetchAdd on the same word returns the value before the
// FetchAdd, whether the response is copied (CRC) or referenced, and
// whatever the read size.
func TestDefect13ReadThenAtomic(t *testing.T) {
	const size = 2 << 20
	for _, f := range framings {
		for _, chunk := range []int{1000, 1 << 20} {
			o := defaults()
			o.framing = f.opts
			p := newOpPair(t, o)
			src := region(t, p.table, testPD, size, 0, mem.AccessRemoteRead|mem.AccessRemoteAtomic)
			sink := region(t, p.table, testPD, size, 0, mem.AccessLocalWrite)
			binary.NativeEndian.PutUint64(src.Bytes()[size-8:], 1000)
			post(t, p.a,
				SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(sink)}, Remote: rdma.RemoteBuffer{STag: stagOf(src), TO: src.Base()}},
				SendWR{ID: 2, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: stagOf(src), TO: src.Base() + size - 8}, Add: 1})
			pump(p.a, p.b, chunk)
			got := poll(p.a)
			wantComps(t, got, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
			if r := binary.NativeEndian.Uint64(sink.Bytes()[size-8:]); r != 1000 || got[1].Original != 1000 {
				t.Errorf("%s, reads of %d: the Read (posted first) returned %d, the FetchAdd found %d: want 1000 for both", f.name, chunk, r, got[1].Original)
			}
			if v := binary.NativeEndian.Uint64(src.Bytes()[size-8:]); v != 1001 {
				t.Errorf("the word holds %d, want 1001", v)
			}
		}
	}
}

// TestAtomicRunsBeforeLaterMessages: with no Read before it, an atomic
// runs as soon as its FPDU ended, so it precedes the placement of every
// later message (docs/extensions.md §2: at a later Send's receive
// completion the target holds the result); and a Read after an atomic
// returns the atomic's result.
func TestAtomicRunsBeforeLaterMessages(t *testing.T) {
	p := newOpPair(t, defaults())
	if _, err := p.b.PostRecv([]RecvWR{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	binary.NativeEndian.PutUint64(p.remote.Bytes()[16:], 5)
	post(t, p.a,
		SendWR{ID: 1, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: stagOf(p.remote), TO: p.remote.Base() + 16}, Add: 10},
		SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Signaled},
		SendWR{ID: 3, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 8}}, Remote: rdma.RemoteBuffer{STag: stagOf(p.remote), TO: p.remote.Base() + 16}})
	rxAll(p.b, txAll(p.a), 1<<20)
	wantComps(t, poll(p.b), Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}})
	if v := binary.NativeEndian.Uint64(p.remote.Bytes()[16:]); v != 15 {
		t.Fatalf("at the Send's completion the target holds %d, want 15", v)
	}
	pump(p.a, p.b, 1<<20)
	got := poll(p.a)
	wantComps(t, got, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 3}})
	if got[0].Original != 5 || binary.NativeEndian.Uint64(p.local.Bytes()) != 15 {
		t.Fatalf("FetchAdd found %d, the Read returned %d", got[0].Original, binary.NativeEndian.Uint64(p.local.Bytes()))
	}
}

// TestFenceWaitsForReadsAndAtomics: a fenced WR goes out only once every
// earlier Read and atomic completed (RFC 5040 §5.5); an unfenced one does
// not wait.
func TestFenceWaitsForReadsAndAtomics(t *testing.T) {
	for _, first := range []rdma.Opcode{rdma.OpRead, rdma.OpFetchAdd} {
		p := newOpPair(t, defaults())
		if _, err := p.b.PostRecv([]RecvWR{{ID: 1}, {ID: 2}}); err != nil {
			t.Fatal(err)
		}
		post(t, p.a,
			SendWR{ID: 1, Op: first, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 8}}, Remote: rdma.RemoteBuffer{STag: stagOf(p.remote), TO: p.remote.Base()}},
			SendWR{ID: 2, Op: rdma.OpSend},
			SendWR{ID: 3, Op: rdma.OpSend, Flags: rdma.Signaled | rdma.Fence})
		out := txAll(p.a)
		if sent := newPeer(t, defaults()).recv(out); len(sent) != 2 || p.a.WantTx() {
			t.Fatalf("%v: %d messages sent before the response (want the request and the unfenced Send)", first, len(sent))
		}
		rxAll(p.b, out, 1<<20)
		pump(p.a, p.b, 1<<20)
		wantComps(t, poll(p.a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 3}})
		wantComps(t, poll(p.b), Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 2}})
	}
}

// TestORDQueuesLocally: with ORD requests outstanding, the next Read or
// atomic waits in the send queue (counted once in ORDStalls) and goes when
// a response frees a credit.
func TestORDQueuesLocally(t *testing.T) {
	o := defaults()
	o.ord, o.ird = 1, 1
	p := newOpPair(t, o)
	read := func(id uint64) SendWR {
		return SendWR{ID: id, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 8}}, Remote: rdma.RemoteBuffer{STag: stagOf(p.remote), TO: p.remote.Base()}}
	}
	post(t, p.a, read(1), read(2), SendWR{ID: 3, Op: rdma.OpWrite, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: stagOf(p.remote)}})
	out := txAll(p.a)
	if sent := newPeer(t, o).recv(out); len(sent) != 1 || p.a.ORDInUse() != 1 || p.a.WantTx() {
		t.Fatalf("sent %d messages with ORD 1 (in use %d)", len(sent), p.a.ORDInUse())
	}
	if len(txAll(p.a)) != 0 || p.a.Stats().ORDStalls != 1 {
		t.Fatalf("ORD stalls counted %d", p.a.Stats().ORDStalls)
	}
	rxAll(p.b, out, 100)
	pump(p.a, p.b, 100)
	wantComps(t, poll(p.a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 3}})
	if p.b.State() != rdma.StateRTS || p.b.IRDInUse() != 0 {
		t.Fatalf("responder %v (%v), IRD in use %d", p.b.State(), p.b.Err(), p.b.IRDInUse())
	}
}

// TestSendCompletionWaitsForEarlierAtomic: an atomic behind a Read Response
// runs only once that response was generated (RFC 7306 §7), so a Send that
// follows the atomic is placed first; its receive completion waits until
// the atomic ran, so at the Send's completion the target holds the
// atomic's result (docs/extensions.md, "Ordering guarantees").
func TestSendCompletionWaitsForEarlierAtomic(t *testing.T) {
	const size = 1 << 20
	p := newOpPair(t, defaults())
	src := region(t, p.table, testPD, size, 0, mem.AccessRemoteRead|mem.AccessRemoteAtomic)
	sink := region(t, p.table, testPD, size, 0, mem.AccessLocalWrite)
	if _, err := p.b.PostRecv([]RecvWR{{ID: 7}}); err != nil {
		t.Fatal(err)
	}
	binary.NativeEndian.PutUint64(src.Bytes(), 5)
	post(t, p.a,
		SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(sink)}, Remote: rdma.RemoteBuffer{STag: stagOf(src), TO: src.Base()}},
		SendWR{ID: 2, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: stagOf(src), TO: src.Base()}, Add: 10},
		SendWR{ID: 3, Op: rdma.OpSend, Flags: rdma.Signaled})
	// The responder receives all three requests but sends nothing yet: the
	// Read Response is still queued, so the atomic has not run.
	rxAll(p.b, txAll(p.a), 1<<20)
	if got := poll(p.b); len(got) != 0 {
		t.Fatalf("the Send completed (%+v) while the atomic before it had not run (the target holds %d)", got, binary.NativeEndian.Uint64(src.Bytes()))
	}
	pump(p.a, p.b, 1<<20)
	wantComps(t, poll(p.b), Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 7}})
	if v := binary.NativeEndian.Uint64(src.Bytes()); v != 15 {
		t.Fatalf("after the Send's completion the target holds %d, want 15", v)
	}
	got := poll(p.a)
	wantComps(t, got, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 3}})
	if r := binary.NativeEndian.Uint64(sink.Bytes()); r != 5 || got[1].Original != 5 {
		t.Fatalf("the Read returned %d and the FetchAdd found %d: want 5 for both", r, got[1].Original)
	}
}
