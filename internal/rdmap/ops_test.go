package rdmap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// framings are the MPA framings the operation tests run over.
var framings = []struct {
	name string
	opts fpdu.Options
}{
	{"plain", fpdu.Options{}},
	{"CRC", fpdu.Options{CRC: true}},
	{"CRC+markers", fpdu.Options{CRC: true, SendMarkers: true, RecvMarkers: true}},
	{"markers-from-offset-100", fpdu.Options{SendMarkers: true, RecvMarkers: true}},
}

// opPair is two cores A and B over one table, with B's memory: a buffer
// for remote access (all rights) and receives posted.
type opPair struct {
	table  *mem.Table
	a, b   *Core
	remote *mem.Region // B's, remote read/write/atomic/invalidate
	recvB  *mem.Region // B's receive buffer
	local  *mem.Region // A's, local write
}

func newOpPair(t testing.TB, o cfg) *opPair {
	table := mem.NewTable(mem.TableOptions{})
	p := &opPair{table: table, a: newCore(t, table, o), b: newCore(t, table, o)}
	p.remote = region(t, table, testPD, 8192, 0, mem.AccessLocalWrite|mem.AccessRemoteRead|mem.AccessRemoteWrite|mem.AccessRemoteAtomic|mem.AccessRemoteInvalidate)
	p.recvB = region(t, table, testPD, 8192, 0, mem.AccessLocalWrite)
	p.local = region(t, table, testPD, 8192, 0, mem.AccessLocalWrite)
	for i := range p.remote.Bytes() {
		p.remote.Bytes()[i] = byte(i * 7)
	}
	return p
}

// TestOperations runs every operation between two cores, over each
// framing and with reads of 1, 7, 100 and 65536 octets.
func TestOperations(t *testing.T) {
	type op struct {
		name string
		v2   bool
		run  func(t *testing.T, p *opPair)
	}
	ops := []op{
		{"Send-multi-SGE", false, func(t *testing.T, p *opPair) {
			src := region(t, p.table, testPD, 5000, 'S', 0)
			if _, err := p.b.PostRecv([]RecvWR{{ID: 9, SGL: []rdma.SGE{{STag: stagOf(p.recvB), Length: 10}, {STag: stagOf(p.recvB), Offset: 100, Length: 6000}}}}); err != nil {
				t.Fatal(err)
			}
			post(t, p.a, SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Solicited | rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(src), Length: 3000}, {STag: stagOf(src), Offset: 3000, Length: 2000}}})
			pump(p.a, p.b, p.chunk(t))
			wantComps(t, poll(p.a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}})
			r := poll(p.b)
			wantComps(t, r, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 9}})
			if r[0].Len != 5000 || !r[0].Solicited || r[0].Invalidated != 0 || r[0].HasImmediate {
				t.Fatalf("receive %+v", r[0])
			}
			got := append(append([]byte(nil), p.recvB.Bytes()[:10]...), p.recvB.Bytes()[100:100+4990]...)
			if !bytes.Equal(got, src.Bytes()) {
				t.Fatal("Send payload differs")
			}
		}},
		{"Write-then-Read", false, func(t *testing.T, p *opPair) {
			src := region(t, p.table, testPD, 6000, 'W', 0)
			post(t, p.a,
				SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}, Remote: rdma.RemoteBuffer{STag: uint32(p.remote.STag()), TO: p.remote.Base() + 100}},
				SendWR{ID: 2, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 6100}}, Remote: rdma.RemoteBuffer{STag: uint32(p.remote.STag()), TO: p.remote.Base()}})
			pump(p.a, p.b, p.chunk(t))
			wantComps(t, poll(p.a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
			if !bytes.Equal(p.local.Bytes()[100:6100], src.Bytes()) || !bytes.Equal(p.local.Bytes()[:6100], p.remote.Bytes()[:6100]) {
				t.Fatal("Read did not return what the Write wrote")
			}
		}},
		{"Atomics", false, func(t *testing.T, p *opPair) {
			binary.NativeEndian.PutUint64(p.remote.Bytes()[8:], 40)
			post(t, p.a,
				SendWR{ID: 1, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 8}}, Remote: rdma.RemoteBuffer{STag: uint32(p.remote.STag()), TO: p.remote.Base() + 8}, Add: 2},
				SendWR{ID: 2, Op: rdma.OpCompareSwap, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: uint32(p.remote.STag()), TO: p.remote.Base() + 8}, Compare: 42, CompareMask: ^uint64(0), Swap: 7, SwapMask: ^uint64(0)})
			pump(p.a, p.b, p.chunk(t))
			c := poll(p.a)
			wantComps(t, c, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
			if c[0].Original != 40 || c[1].Original != 42 || c[0].Len != 8 || binary.NativeEndian.Uint64(p.local.Bytes()) != 40 {
				t.Fatalf("atomic results %+v", c)
			}
			if v := binary.NativeEndian.Uint64(p.remote.Bytes()[8:]); v != 7 {
				t.Fatalf("target holds %d, want 7", v)
			}
		}},
		{"Immediate-and-WriteImm", false, func(t *testing.T, p *opPair) {
			src := region(t, p.table, testPD, 2000, 'I', 0)
			if _, err := p.b.PostRecv([]RecvWR{{ID: 1, SGL: []rdma.SGE{{STag: stagOf(p.recvB), Length: 16}}}, {ID: 2}}); err != nil {
				t.Fatal(err)
			}
			post(t, p.a,
				SendWR{ID: 1, Op: rdma.OpImmediate, Flags: rdma.Solicited, Immediate: 0x0102030405060708},
				SendWR{ID: 2, Op: rdma.OpWrite, Flags: rdma.WithImmediate | rdma.Signaled, Immediate: 99, SGL: []rdma.SGE{sge(src)}, Remote: rdma.RemoteBuffer{STag: uint32(p.remote.STag()), TO: p.remote.Base()}})
			pump(p.a, p.b, p.chunk(t))
			wantComps(t, poll(p.a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
			r := poll(p.b)
			wantComps(t, r, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 2}})
			if r[0].Immediate != 0x0102030405060708 || !r[0].HasImmediate || !r[0].Solicited || r[0].Invalidated != 0 || r[0].Len != 8 || r[1].Immediate != 99 || r[1].Len != 0 {
				t.Fatalf("receives %+v", r)
			}
			if !bytes.Equal(p.recvB.Bytes()[:8], []byte{1, 2, 3, 4, 5, 6, 7, 8}) || !bytes.Equal(p.remote.Bytes()[:2000], src.Bytes()) {
				t.Fatal("immediate data or Write payload not placed")
			}
		}},
		{"ReadInv-then-SendInv", false, func(t *testing.T, p *opPair) {
			if _, err := p.b.PostRecv([]RecvWR{{ID: 1, SGL: []rdma.SGE{{STag: stagOf(p.recvB), Length: 16}}}}); err != nil {
				t.Fatal(err)
			}
			stag := uint32(p.remote.STag())
			post(t, p.a, SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Invalidate | rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 64}}, Remote: rdma.RemoteBuffer{STag: stag, TO: p.remote.Base()}})
			pump(p.a, p.b, p.chunk(t))
			post(t, p.a, SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Invalidate | rdma.Signaled, InvalidateSTag: stag})
			pump(p.a, p.b, p.chunk(t))
			wantComps(t, poll(p.a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
			r := poll(p.b)
			wantComps(t, r, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}})
			if r[0].Invalidated != stag || r[0].Solicited || r[0].HasImmediate || p.remote.Valid() || p.local.Valid() {
				t.Fatalf("receive %+v; remote valid %v, local valid %v", r[0], p.remote.Valid(), p.local.Valid())
			}
			if !bytes.Equal(p.local.Bytes()[:64], p.remote.Bytes()[:64]) {
				t.Fatal("Read data differs")
			}
		}},
		{"Read-and-SendInv-of-its-source-in-one-burst", false, func(t *testing.T, p *opPair) {
			// The Read Request leased its source when it arrived: the
			// invalidation the Send names waits for the response, and
			// the receive completes after it.
			if _, err := p.b.PostRecv([]RecvWR{{ID: 1}}); err != nil {
				t.Fatal(err)
			}
			stag := uint32(p.remote.STag())
			post(t, p.a,
				SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 6000}}, Remote: rdma.RemoteBuffer{STag: stag, TO: p.remote.Base()}},
				SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Invalidate | rdma.Signaled, InvalidateSTag: stag})
			rxAll(p.b, txAll(p.a), p.chunk(t))
			if r := poll(p.b); len(r) != 0 || p.remote.Valid() {
				t.Fatalf("receive %+v before the response went (source valid: %v)", r, p.remote.Valid())
			}
			pump(p.a, p.b, p.chunk(t))
			wantComps(t, poll(p.a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
			wantComps(t, poll(p.b), Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}})
			if !bytes.Equal(p.local.Bytes()[:6000], p.remote.Bytes()[:6000]) {
				t.Fatal("Read data differs")
			}
		}},
		{"SendImm", true, func(t *testing.T, p *opPair) {
			src := region(t, p.table, testPD, 3000, 'V', 0)
			if _, err := p.b.PostRecv([]RecvWR{{ID: 1, SGL: []rdma.SGE{{STag: stagOf(p.recvB), Length: 3000}}}, {ID: 2}}); err != nil {
				t.Fatal(err)
			}
			post(t, p.a,
				SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.WithImmediate | rdma.Signaled, Immediate: 5, SGL: []rdma.SGE{sge(src)}},
				SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.WithImmediate | rdma.Solicited | rdma.Invalidate | rdma.Signaled, Immediate: 6, InvalidateSTag: uint32(p.remote.STag())})
			pump(p.a, p.b, p.chunk(t))
			wantComps(t, poll(p.a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2}})
			r := poll(p.b)
			wantComps(t, r, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 1}}, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 2}})
			if r[0].Immediate != 5 || r[0].Len != 3000 || r[1].Immediate != 6 || !r[1].HasImmediate || !r[1].Solicited || r[1].Invalidated == 0 {
				t.Fatalf("receives %+v", r)
			}
			if !bytes.Equal(p.recvB.Bytes()[:3000], src.Bytes()) || p.remote.Valid() {
				t.Fatal("Send with Immediate payload not placed, or the STag still valid")
			}
		}},
		{"ReadV2", true, func(t *testing.T, p *opPair) {
			post(t, p.a, SendWR{ID: 3, Op: rdma.OpReadV2, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 1000}, {STag: stagOf(p.local), Offset: 4000, Length: 3000}}, Remote: rdma.RemoteBuffer{STag: uint32(p.remote.STag()), TO: p.remote.Base()}})
			pump(p.a, p.b, p.chunk(t))
			wantComps(t, poll(p.a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 3}})
			got := append(append([]byte(nil), p.local.Bytes()[:1000]...), p.local.Bytes()[4000:7000]...)
			if !bytes.Equal(got, p.remote.Bytes()[:4000]) {
				t.Fatal("Read V2 data differs")
			}
		}},
	}
	for _, f := range framings {
		for _, chunk := range []int{1, 7, 100, 65536} {
			for _, o := range ops {
				t.Run(fmt.Sprintf("%s/%d/%s", f.name, chunk, o.name), func(t *testing.T) {
					c := defaults()
					c.framing, c.v2 = f.opts, o.v2
					if f.opts.SendMarkers && !f.opts.CRC {
						c.rxOff, c.txOff = 100, 100 // full operation begins 100 octets into the streams
					}
					p := newOpPair(t, c)
					testChunk = chunk
					o.run(t, p)
					if p.a.State() != rdma.StateRTS || p.b.State() == rdma.StateError {
						t.Fatalf("states %v (%v), %v (%v)", p.a.State(), p.a.Err(), p.b.State(), p.b.Err())
					}
				})
			}
		}
	}
}

// testChunk is the read size of the running operation test.
var testChunk = 65536

func (p *opPair) chunk(*testing.T) int { return testChunk }

// post posts send WRs or fails the test.
func post(t testing.TB, c *Core, wrs ...SendWR) {
	t.Helper()
	if n, err := c.PostSend(wrs); err != nil {
		t.Fatalf("posted %d: %v", n, err)
	}
}
