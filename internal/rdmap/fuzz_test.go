package rdmap

import (
	"encoding/binary"
	"testing"

	"github.com/goiwarp/iwarp/rdma"
)

// FuzzRx feeds a core the ULPDUs of a hostile peer, framed correctly (so
// that the protocol checks, not the framing, are exercised), in reads of
// a fuzzed size. Whatever arrives, the core must not panic, must answer
// (or terminate) within its budget, and after Close every accepted work
// request must have completed exactly once; the canaries around its
// registered memory must be intact.
//
// The input is a read size octet, then ULPDUs each prefixed by a 2-octet
// length (a tail shorter than its length is cut).
func FuzzRx(f *testing.F) {
	e := newTermEnv(f, defaults())
	for _, tc := range termCases {
		var in []byte
		in = append(in, 7)
		u := tc.bad(e)
		in = binary.BigEndian.AppendUint16(in, uint16(len(u)))
		in = append(in, u...)
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 1 {
			return
		}
		chunk := int(in[0]) + 1
		o := defaults()
		o.v2 = in[0]&1 == 1
		e := newTermEnv(t, o)
		post(t, e.c,
			SendWR{ID: 100, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}, Remote: rdma.RemoteBuffer{STag: 77}},
			SendWR{ID: 101, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 8}}, Remote: rdma.RemoteBuffer{STag: 77}},
			SendWR{ID: 102, Op: rdma.OpSend})
		txAll(e.c)
		var ulpdus [][]byte
		for in = in[1:]; len(in) >= 2; {
			n := int(binary.BigEndian.Uint16(in))
			in = in[2:]
			n = min(n, len(in))
			if n >= 14 {
				ulpdus = append(ulpdus, in[:n])
			}
			in = in[n:]
		}
		if len(ulpdus) == 0 {
			return
		}
		rxAll(e.c, e.p.frame(ulpdus...), chunk)
		txAll(e.c)
		e.c.Close()
		seen := map[[2]uint64]int{}
		for _, comp := range poll(e.c) {
			seen[[2]uint64{uint64(comp.Queue), comp.ID}]++
		}
		for _, k := range [][2]uint64{{uint64(SendQueue), 100}, {uint64(SendQueue), 101}, {uint64(RecvQueue), 5}} {
			if seen[k] != 1 {
				t.Fatalf("WR %v completed %d times", k, seen[k])
			}
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("WR %v completed %d times", k, n)
			}
		}
		for _, b := range e.bufs {
			for i := range 64 {
				if b[i] != canary || b[128+i] != canary {
					t.Fatal("canary overwritten")
				}
			}
		}
	})
}
