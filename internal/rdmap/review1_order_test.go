package rdmap

import (
	"encoding/binary"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview1WriteOvertakesDeferredAtomic: the peer's Read (referenced,
// CRC off), its FetchAdd on word W, then its Write of 100 to W. The Core
// defers the atomic behind the Read Response (RFC 7306 §7: "Atomic
// Response Message will not be generated until RDMA Read Response has been
// generated") and keeps placing later messages, which RFC 7306 §7 allows
// ("No Placement Guarantee between RDMA Write Payload and Atomic
// Request"): the outcome is one of the two serial orders, never a torn
// word, and docs/extensions.md says so (Fence at the requester gives the
// posting order). Found by review 1 against the earlier, stronger promise.
func TestReview1WriteOvertakesDeferredAtomic(t *testing.T) {
	o := defaults()
	o.framing = fpdu.Options{} // no CRC: the 8 KiB Read Response is referenced
	c, p, table := single(t, o)
	r := region(t, table, testPD, 8192, 0, mem.AccessRemoteRead|mem.AccessRemoteWrite|mem.AccessRemoteAtomic)
	clear(r.Bytes())
	var hundred [8]byte
	binary.NativeEndian.PutUint64(hundred[:], 100)
	in := p.frame(
		cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x77, 0, 8192, stagOf(r), r.Base())),
		atomicReq(2, 0 /* FetchAdd */, stagOf(r), r.Base()),
		cat(tagged(0, true, stagOf(r), r.Base()), hundred[:]),
	)
	rxAll(c, in, len(in))
	if c.State() != rdma.StateRTS {
		t.Fatalf("%v (%v)", c.State(), c.Err())
	}
	var orig uint64
	found := false
	for _, u := range p.recv(txAll(c)) {
		if u[1]&0x0F == 0xB { // Atomic Response: request identifier, original value
			orig, found = binary.BigEndian.Uint64(u[22:]), true
		}
	}
	if !found {
		t.Fatal("no Atomic Response")
	}
	final := binary.NativeEndian.Uint64(r.Bytes())
	atomicFirst := orig == 0 && final == 100
	writeFirst := orig == 100 && final == 101
	if !atomicFirst && !writeFirst {
		t.Fatalf("FetchAdd returned %d and W holds %d: want a serial order (0 and 100, or 100 and 101)", orig, final)
	}
}
