package engine

import (
	"bytes"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp/internal/mem"
)

// lingerConn is the responder's connection in
// TestBatchedResponsesPeerReissuesBeforeFlushReturns. It hides the TCP
// socket's RawConn, so fpdu.Writer.TryFlush never writes: as in the
// iwarp_portable build and on non-Linux systems, every response goes out
// through the transmit goroutine's blocking Flush. After each write it
// lingers before returning, which widens the window in which the peer
// already has a batch of responses, completes its WRs and sends its next
// batch of requests while the responder has not yet marked the responses
// sent.
type lingerConn struct {
	net.Conn
	d time.Duration
}

func (c *lingerConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil {
		time.Sleep(c.d)
	}
	return n, err
}

// TestBatchedResponsesPeerReissuesBeforeFlushReturns: the traffic of
// `iwarp perf` read-v2/fetchadd/cmpswap bw (queue depth = ORD = IRD = 8,
// batches of unsignaled WRs with the last one signaled, 64-byte Reads, CRC
// on), with the responder's batched responses flushed by the transmit
// goroutine. Responses whose last segment is in the Writer have freed their
// IRD credit, so the peer may legitimately send new requests as soon as it
// has them, before the responder's flush has returned: the IRQ must hold
// the new requests (regression: responses stayed in the IRQ until their
// batch's flush returned, the ring overflowed into them, and the requester
// received a bogus tagged Read Response and sent the Terminate
// RDMAP/2/0x06).
func TestBatchedResponsesPeerReissuesBeforeFlushReturns(t *testing.T) {
	const depth, rounds = 8, 40
	for _, op := range []Op{OpReadV2, OpFetchAdd, OpCmpSwap, OpRead} {
		t.Run(op.String(), func(t *testing.T) {
			o := pairOpts{crc: true, ird: depth, ord: depth, ext: true, depth: 2 * depth}
			ca, cb := tcpPair(t)
			a := newSide(t, o, ca)
			b := newSide(t, o, &lingerConn{Conn: cb, d: time.Millisecond})
			a.params.V2, b.params.V2 = true, true
			// The responder's memory: 64 bytes, read remotely or the
			// target of the atomics (word 0). Written before it is
			// registered.
			words := make([]uint64, 8)
			buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 64)
			pattern(buf, 0x5a)
			if op.atomic() {
				clear(buf)
			}
			src, err := b.table.Register(b.pd, buf, mem.AccessRemoteRead|mem.AccessRemoteAtomic, 0x4000)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]byte(nil), buf...)
			startPair(t, o, a, b)
			sink, sinkBuf, _ := a.register(t, 64, mem.AccessLocalWrite)
			res, _, _ := a.register(t, 8, mem.AccessLocalWrite)

			wrs := make([]SendWR, depth)
			for r := range rounds {
				for i := range wrs {
					v := uint64(r*depth + i) // the target's value before WR i
					wrs[i] = SendWR{ID: v, Op: op, RemoteSTag: uint32(src.STag()), RemoteTO: src.Base()}
					switch op {
					case OpReadV2, OpRead:
						wrs[i].SGL = []SGE{{Region: sink, Len: 64}}
					case OpFetchAdd:
						wrs[i].SGL, wrs[i].Data = []SGE{{Region: res, Len: 8}}, 1
					case OpCmpSwap:
						wrs[i].SGL = []SGE{{Region: res, Len: 8}}
						wrs[i].Compare, wrs[i].CompareMask = v, ^uint64(0)
						wrs[i].Data, wrs[i].Mask = v+1, ^uint64(0)
					}
				}
				wrs[depth-1].Flags = Signaled
				if n, err := a.qp.PostSend(wrs); n != depth || err != nil {
					t.Fatalf("round %d: posted %d of %d: %v", r, n, depth, err)
				}
				c := waitCQE(t, a.scq)
				if c.Status != StatusSuccess || c.ID != wrs[depth-1].ID {
					t.Fatalf("round %d: completion %+v (requester: %v, responder: %v)", r, c, a.qp.Err(), b.qp.Err())
				}
				if op.atomic() && c.Original != wrs[depth-1].ID {
					t.Fatalf("round %d: original value %d, want %d", r, c.Original, wrs[depth-1].ID)
				}
				if !op.atomic() && !bytes.Equal(sinkBuf, want) {
					t.Fatalf("round %d: read % x, want % x", r, sinkBuf, want)
				}
				clear(sinkBuf)
			}
			if err := a.qp.Err(); err != nil {
				t.Fatalf("requester: %v", err)
			}
			if err := b.qp.Err(); err != nil {
				t.Fatalf("responder: %v", err)
			}
			if n := b.qp.IRDInUse(); n != 0 {
				t.Fatalf("responder: IRD in use %d after the last response", n)
			}
		})
	}
}
