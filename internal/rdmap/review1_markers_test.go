package rdmap

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview1MarkersRefusePlacedWrite: a Write segment's payload has been
// placed completely into a valid target; only its CRC is still to come when
// the target is invalidated. Without markers the Core accepts the segment
// (nothing more is placed: the invalidation drains at once). With markers
// on, RxBuf pins every destination piece for any read into staging
// (pinForRead), even when the payload is complete and the read can only
// bring the CRC, so the same segment is refused with Terminate DDP/1/0x00
// and the connection dies: whether a legal Write kills the stream depends
// on the framing and on where TCP cut the stream. Nor is there any reason
// for the pin to make the invalidation wait.
func TestReview1MarkersRefusePlacedWrite(t *testing.T) {
	o := defaults()
	o.framing = fpdu.Options{CRC: true, SendMarkers: true, RecvMarkers: true}
	e := newTermEnv(t, o)
	stream := e.p.frame(cat(tagged(0, true, stagOf(e.inv), e.inv.Base()), []byte("data")))
	n := rxAll(e.c, stream[:len(stream)-2], 64) // all but the last two octets of the CRC
	if got := string(e.inv.Bytes()[:4]); got != "data" {
		t.Fatalf("payload not placed before the CRC: %q", got)
	}
	e.table.BeginInvalidate(e.inv, e.inv.STag())
	rxAll(e.c, stream[n:], 64)
	if e.c.State() != rdma.StateRTS {
		t.Fatalf("a Write placed before the invalidation is refused: %v (%v)", e.c.State(), e.c.Err())
	}
}
