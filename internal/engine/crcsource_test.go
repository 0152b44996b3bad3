package engine

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
)

// TestReadResponseCRCWhileSourceChanges: the peer's Writes modify a region
// while a large Read Response from it is being sent (RFC 5040 §5.5 allows a
// Read Response to reflect later Writes). With CRC on, every FPDU's CRC must
// still match the bytes sent: the response payload is copied before its CRC
// is computed. (The test races on purpose, so it does not run under -race.)
func TestReadResponseCRCWhileSourceChanges(t *testing.T) {
	if raceEnabled {
		t.Skip("the source is modified concurrently on purpose")
	}
	o := pairOpts{crc: true, ird: 2}
	const size = 8 << 20
	var src *mem.Region
	a, peer := rawSide(t, o, func(a *side) {
		src, _, _ = a.registerFilled(t, size, mem.AccessRemoteRead|mem.AccessRemoteWrite, 1)
	})
	peer.send(t, cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x77, 0, size, uint32(src.STag()), src.Base())))
	chunk := make([]byte, 60000)
	for i := range chunk {
		chunk[i] = byte(i * 13)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for off := 0; off+len(chunk) <= size; off += len(chunk) * 4 {
			w := cat(tagged(0, true, uint32(src.STag()), src.Base()+uint64(off)), chunk)
			if err := peer.fc.Writer().WriteFPDU(w); err != nil {
				return
			}
		}
	}()
	got := 0
	for got < size {
		u := peer.readULPDU(t) // fails the test on a CRC mismatch
		if u[1]&0x0f != 2 {
			t.Fatalf("unexpected FPDU % x", u[:2])
		}
		got += len(u) - 14
	}
	<-done
	if a.qp.State() != StateRTS {
		t.Fatalf("QP left RTS: %v", a.qp.Err())
	}
}
