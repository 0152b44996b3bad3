package engine

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

func TestTermSlots(t *testing.T) {
	if n := len(wire.AllTermCodes()); n+1 > termSlots {
		t.Fatalf("%d Terminate codes do not fit %d slots", n, termSlots)
	}
}

// TestCounters reads the counters after a scripted session: FPDUs and
// bytes both ways, a Terminate sent and its code, the receive-queue-empty
// event, and the device aggregate.
func TestCounters(t *testing.T) {
	o := pairOpts{crc: true}
	var dev Counters
	a, peer := rawSide(t, o, func(a *side) { a.qp.cfg.DeviceCounters = &dev })
	var dst *mem.Region
	dst, _, _ = a.register(t, 64, mem.AccessRemoteWrite)
	peer.send(t, cat(tagged(0, true, uint32(dst.STag()), dst.Base()), []byte("0123456789")))
	peer.send(t, cat(untagged(3, true, 0, 0, 1, 0), []byte("no receive posted")))
	peer.readUntilTerminate(t)
	<-a.qp.Done()
	for _, c := range []*Counters{a.qp.Stats(), &dev} {
		if c.FPDUsReceived.Load() != 2 || c.BytesReceived.Load() != 14+10+18+17 {
			t.Fatalf("received %d FPDUs, %d bytes", c.FPDUsReceived.Load(), c.BytesReceived.Load())
		}
		if c.FPDUsSent.Load() != 1 || c.RecvQueueEmpty.Load() != 1 {
			t.Fatalf("sent %d FPDUs, %d receive-queue-empty events", c.FPDUsSent.Load(), c.RecvQueueEmpty.Load())
		}
		tc := c.Terminates()
		if len(tc) != 1 || tc[0].Code != wire.TermDDPNoBuffer || tc[0].Sent != 1 || tc[0].Received != 0 {
			t.Fatalf("terminates %+v", tc)
		}
	}
}
