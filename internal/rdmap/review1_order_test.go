package rdmap

import (
	"encoding/binary"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
)

// TestReview1WriteOvertakesDeferredAtomic: docs/extensions.md (after the
// ordering table) promises that "this responder performs the memory
// update before it looks at the next message, and only the response may
// be sent later". The rebuilt Core defers an atomic behind an earlier Read
// Response (RFC 7306 §7, defect 13) but keeps placing later messages: the
// peer's Read (referenced, CRC off), its FetchAdd on word W, then its
// Write of 100 to W. A sequential run gives the FetchAdd the value before
// the Write (0) and leaves 100 in W; the Core runs the FetchAdd after the
// Write was placed: it returns 100 and leaves 101. Either the Core must
// not place a message behind a deferred atomic before it ran (hold the
// input, as it already holds receive completions), or the promise goes
// (docs/extensions.md, docs/semantics.md) with the Fence flag as the way
// to get it.
func TestReview1WriteOvertakesDeferredAtomic(t *testing.T) {
	review1Finding(t, 8, "a Write after a deferred atomic is placed before the atomic runs (docs/extensions.md promises the update first)")
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
	if c.State() != StateRTS {
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
	if orig != 0 || final != 100 {
		t.Fatalf("FetchAdd returned %d and W holds %d: want 0 and 100 (the atomic before the later Write)", orig, final)
	}
}
