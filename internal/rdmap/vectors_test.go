package rdmap

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/vectors"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// v2Frames returns the FPDUs of internal/vectors/testdata/v2.tsv by name.
func v2Frames(t *testing.T) map[string][]byte {
	t.Helper()
	frames, err := vectors.ReadFile("../vectors/testdata/v2.tsv")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range frames {
		out[f.Name] = f.Bytes
	}
	return out
}

// TestV2Vectors: a V2 core produces the FPDUs of v2.tsv byte for byte
// (CRC included) as Initiator (Write, Send with Immediate in three
// variants, Read V2 Request, Atomic Request) and as Responder (the Read V2
// Response in two segments and the Atomic Response, sharing QN 3's MSNs).
func TestV2Vectors(t *testing.T) {
	vec := v2Frames(t)
	o := defaults()
	o.v2, o.mulpdu = true, wire.UntaggedHdrLen+8
	t.Run("initiator", func(t *testing.T) {
		c, _, table := single(t, o)
		src := region(t, table, testPD, 64, 0, 0)
		copy(src.Bytes(), "v2-writehello!")
		sink := region(t, table, testPD, 16, 0, mem.AccessLocalWrite)
		res := region(t, table, testPD, 8, 0, mem.AccessLocalWrite)
		post(t, c,
			SendWR{ID: 0, Op: rdma.OpWrite, SGL: []rdma.SGE{{STag: stagOf(src), Length: 8}}, Remote: rdma.RemoteBuffer{STag: 0x1000}},
			SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.WithImmediate, SGL: []rdma.SGE{{STag: stagOf(src), Offset: 8, Length: 6}}, Immediate: 0x1122334455667788},
			SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.WithImmediate, Immediate: 0xdeadbeef},
			SendWR{ID: 3, Op: rdma.OpSend, Flags: rdma.WithImmediate | rdma.Solicited | rdma.Invalidate, InvalidateSTag: 0x00abcd01, Immediate: 7},
			SendWR{ID: 4, Op: rdma.OpReadV2, SGL: []rdma.SGE{sge(sink)}, Remote: rdma.RemoteBuffer{STag: 0x2000, TO: 0x40}},
			SendWR{ID: 5, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(res)}, Remote: rdma.RemoteBuffer{STag: 0x2000, TO: 0x80}, Add: 1})
		out := txAll(c)
		for _, name := range []string{"v2-write", "v2-send-imm-seg1", "v2-send-imm-last", "v2-send-imm-empty", "v2-send-inv-se-imm", "v2-read-request", "v2-atomic-request"} {
			want := vec[name]
			if len(out) < len(want) {
				t.Fatalf("%s: only %d octets left", name, len(out))
			}
			got := out[:len(want)]
			out = out[len(want):]
			if name == "v2-atomic-request" {
				// The request identifier is the requester's choice (ours:
				// its send-queue sequence number, 5); the vector uses 1.
				if binary.BigEndian.Uint32(got[24:]) != 5 {
					t.Fatalf("request identifier % x", got[24:28])
				}
				got, want = got[:24], want[:24]
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s:\n got % x\nwant % x", name, got, want)
			}
		}
	})
	t.Run("responder", func(t *testing.T) {
		seq := []uint32{0x20, 0x00} // STag 0x2000: index 0x20, key 0x00
		table := mem.NewTable(mem.TableOptions{Random: func() uint32 { v := seq[0]; seq = seq[1:]; return v }})
		c := newCore(t, table, o)
		buf := make([]byte, 256)
		for i := range 16 {
			buf[0x40+i] = byte(i)
		}
		binary.NativeEndian.PutUint64(buf[0x80:], 41)
		r, err := table.Register(testPD, buf, mem.AccessRemoteRead|mem.AccessRemoteAtomic, 0)
		if err != nil || r.STag() != 0x2000 {
			t.Fatalf("region %v %v", r.STag(), err)
		}
		rxAll(c, cat(vec["v2-read-request"], vec["v2-atomic-request"]), 7)
		want := cat(vec["v2-read-response-seg1"], vec["v2-read-response-seg2"], vec["v2-atomic-response"])
		if got := txAll(c); !bytes.Equal(got, want) {
			t.Errorf("responses\n got % x\nwant % x", got, want)
		}
	})
}

// TestQN3SharedMSNs: with a Read, a Read V2 and a FetchAdd outstanding
// together, QN 3's MSNs count only the QN 3 answers: the Read V2 Response
// has MSN 1 and the Atomic Response MSN 2 (the Read Response is tagged).
func TestQN3SharedMSNs(t *testing.T) {
	o := defaults()
	o.v2 = true
	c, p, table := single(t, o)
	src := region(t, table, testPD, 64, 0, mem.AccessRemoteRead|mem.AccessRemoteAtomic)
	stag := stagOf(src)
	rxAll(c, p.frame(
		cat(v2(untagged(0, true, 0, 1, 1, 0), 0x1), readReqHdr(0x77, 0, 8, stag, src.Base())),
		readV2Req(v2(untagged(0, true, 0, 1, 2, 0), 0x11), 8, stag, src.Base()+8),
		v2(atomicReq(3, 0, stag, src.Base()+16), 0xA)), 1<<20)
	got := p.recv(txAll(c))
	if len(got) != 3 || got[0][0]&0x80 == 0 || got[0][1] != 0x82 {
		t.Fatalf("answers %x: want the tagged Read Response (RV=2) first", got)
	}
	if got[1][1] != 0x92 || be32(got[1][6:]) != 3 || be32(got[1][10:]) != 1 {
		t.Fatalf("Read V2 Response header % x: want QN 3 MSN 1", got[1][:18])
	}
	if got[2][1] != 0x8b || be32(got[2][6:]) != 3 || be32(got[2][10:]) != 2 {
		t.Fatalf("Atomic Response header % x: want QN 3 MSN 2", got[2][:18])
	}
}

// TestRTRsNotChecked: zero-length Writes and Reads to unknown STags (the
// RTR shapes of docs/spec/mpa.md §1) are accepted: the Read is answered
// with a zero-length Read Response.
func TestRTRsNotChecked(t *testing.T) {
	c, p, _ := single(t, defaults())
	got := p.recv(func() []byte {
		rxAll(c, p.frame(tagged(0, true, 1, 0), cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0, 0, 0, 1, 0))), 3)
		return txAll(c)
	}())
	if want := tagged(2, true, 0, 0); len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Fatalf("answer %x, want the zero-length Read Response % x", got, want)
	}
	if c.State() != rdma.StateRTS {
		t.Fatalf("state %v: %v", c.State(), c.Err())
	}
}

// TestWriteInsideSend: tagged and untagged segments are independent: a
// Write between two segments of a Send is placed and the Send completes
// (the hostile-peer suite's DDP/tagged-Write-inside-untagged-Send).
func TestWriteInsideSend(t *testing.T) {
	c, p, table := single(t, defaults())
	rb := region(t, table, testPD, 16, 0, mem.AccessLocalWrite)
	w := region(t, table, testPD, 16, 0, mem.AccessRemoteWrite)
	if _, err := c.PostRecv([]RecvWR{{ID: 1, SGL: []rdma.SGE{sge(rb)}}}); err != nil {
		t.Fatal(err)
	}
	rxAll(c, p.frame(cat(untagged(3, false, 0, 0, 1, 0), []byte("head")),
		cat(tagged(0, true, stagOf(w), w.Base()), []byte("inside")),
		cat(untagged(3, true, 0, 0, 1, 4), []byte("tail"))), 5)
	got := poll(c)
	wantComps(t, got, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}})
	if got[0].Len != 8 || string(rb.Bytes()[:8]) != "headtail" || string(w.Bytes()[:6]) != "inside" {
		t.Fatalf("receive %+v: %q, %q", got[0], rb.Bytes(), w.Bytes())
	}
}

// TestWaitingAndProgress: the core waits on the peer while octets are
// unwritten, a response is awaited or an FPDU is received in part, and
// Progress moves with every octet and completion.
func TestWaitingAndProgress(t *testing.T) {
	c, p, table := single(t, defaults())
	sink := region(t, table, testPD, 8, 0, mem.AccessLocalWrite)
	if c.Waiting() {
		t.Fatal("an idle QP waits")
	}
	pr := c.Progress()
	post(t, c, SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(sink)}, Remote: rdma.RemoteBuffer{STag: 9}})
	if !c.WantTx() {
		t.Fatal("nothing to send after a post")
	}
	bufs := c.TxBufs(nil)
	if !c.Waiting() {
		t.Fatal("not waiting with octets unwritten")
	}
	c.TxDone(len(bufs[0]))
	if !c.Waiting() || c.Progress() == pr {
		t.Fatal("not waiting for the Read's response, or no progress counted")
	}
	rr := p.recv(bufs[0])[0]
	resp := p.frame(cat(tagged(2, true, be32(rr[18:]), be64(rr[22:])), make([]byte, 8)))
	rxAll(c, resp[:10], 10)
	pr = c.Progress()
	rxAll(c, resp[10:], 100)
	if c.Waiting() || c.Progress() == pr {
		t.Fatalf("waiting %v after the response", c.Waiting())
	}
	wantComps(t, poll(c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}})
	rxAll(c, p.frame(tagged(0, true, 1, 0))[:5], 5)
	if !c.Waiting() {
		t.Fatal("not waiting inside an FPDU")
	}
}

// TestResponderHoldsSend: with Framing.HoldSendUntilReceive (the MPA
// Responder, RFC 5044 §7.1.2) nothing is sent before the first FPDU from
// the Initiator arrived.
func TestResponderHoldsSend(t *testing.T) {
	o := defaults()
	o.framing.HoldSendUntilReceive = true
	c, p, _ := single(t, o)
	post(t, c, SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: 9}})
	if c.WantTx() || len(txAll(c)) != 0 {
		t.Fatal("sent before the Initiator's first FPDU")
	}
	rxAll(c, p.frame(tagged(0, true, 1, 0))[:16], 8) // the first header
	if !c.WantTx() || len(p.recv(txAll(c))) != 1 {
		t.Fatal("held back after the Initiator's first FPDU")
	}
}

// TestAtomicsVectors: every row of atomics.tsv, sent as a FetchAdd or
// CmpSwap from one core to another, returns the original value (in the
// completion and the result buffer) and leaves the result in the target.
func TestAtomicsVectors(t *testing.T) {
	rows, err := vectors.ReadAtomics("../vectors/testdata/" + vectors.AtomicsFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 90 {
		t.Fatalf("only %d rows", len(rows))
	}
	p := newOpPair(t, defaults())
	for i, v := range rows {
		to := uint64(8 * (i % 4))
		binary.NativeEndian.PutUint64(p.remote.Bytes()[to:], v.Original)
		wr := SendWR{ID: uint64(i), Op: rdma.OpFetchAdd, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 8}}, Remote: rdma.RemoteBuffer{STag: stagOf(p.remote), TO: p.remote.Base() + to}, Add: v.Data, AddMask: v.Mask}
		if v.Op == "cmpswap" {
			wr.Op, wr.Compare, wr.CompareMask = rdma.OpCompareSwap, v.Compare, v.CompareMask
			wr.Add, wr.AddMask, wr.Swap, wr.SwapMask = 0, 0, v.Data, v.Mask
		}
		post(t, p.a, wr)
		pump(p.a, p.b, 1<<20)
		got := poll(p.a)
		if len(got) != 1 || got[0].Status != rdma.StatusSuccess || got[0].Original != v.Original || binary.NativeEndian.Uint64(p.local.Bytes()) != v.Original {
			t.Fatalf("%+v: completion %+v", v, got)
		}
		p.a.ReleaseSend(got[0].Slot)
		if r := binary.NativeEndian.Uint64(p.remote.Bytes()[to:]); r != v.Result {
			t.Fatalf("%+v: target holds %x", v, r)
		}
	}
}
