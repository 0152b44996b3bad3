package verbs

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/testnet"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview2NoPlacementAfterDeregisterUnderFlood: a hostile peer streams
// tagged Writes into region x as fast as it can while x is deregistered,
// with a context that ends at once or one that does not: once Deregister
// returned, x's buffer never changes again, whatever the peer still sends
// (the QP then fails the Writes naming x). In every mode, with CRC and
// with markers.
func TestReview2NoPlacementAfterDeregisterUnderFlood(t *testing.T) {
	for _, m := range modes {
		for _, markers := range []bool{false, true} {
			for _, expired := range []bool{false, true} {
				for _, sends := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/markers=%v/expired=%v/sends=%v", m.name, markers, expired, sends), func(t *testing.T) {
						for round := range 4 {
							floodDeregister(t, m.noPoll, m.pipe, markers, expired, sends, round)
						}
					})
				}
			}
		}
	}
	noLeaks(t)
}

// floodDeregister floods x with tagged Writes, or with Sends into
// receives posted on x (sends), deregisters x at a point that depends on
// round, and checks that x's buffer no longer changes afterwards.
func floodDeregister(t *testing.T, noPoll, pipe, markers, expired, sends bool, round int) {
	o := modeOpts(noPoll, pipe)
	o.framing.RecvMarkers = markers
	o.drain = 20 * time.Millisecond // the flooding peer never closes: end the drain soon
	e := newEnd(t, o)
	var ca, cb net.Conn
	if pipe {
		pa, pb := pipePair()
		t.Cleanup(func() { pa.Close(); pb.Close() })
		ca, cb = pa, pb
	} else {
		ca, cb = testnet.TCPPair(t)
	}
	e.start(t, ca, o)
	p := newPeer(t, cb)
	p.fc = fpdu.NewConn(cb, fpdu.Options{CRC: true, SendMarkers: markers})
	buf := make([]byte, 256<<10)
	x := e.register(t, buf, mem.AccessRemoteWrite|mem.AccessLocalWrite)
	payload := bytes.Repeat([]byte{0xab}, 16<<10)
	if sends {
		for i := range o.rq {
			off := uint64(i%16) * uint64(len(payload))
			e.postRecv(t, rdmap.RecvWR{ID: uint64(i), SGL: []rdma.SGE{{STag: uint32(x.STag()), Offset: off, Length: uint32(len(payload))}}})
		}
	}
	flooding := make(chan struct{})
	go func() {
		defer close(flooding)
		for i := 0; ; i++ {
			to := x.Base() + uint64(i%16)*uint64(len(payload))
			ulpdu := tagged(wire.OpWrite, uint32(x.STag()), to, payload)
			if sends {
				ulpdu = p.untagged(wire.OpSend, wire.QNSend, 0, nil, payload)
			}
			if err := p.fc.Writer().WriteFPDU(ulpdu); err != nil {
				return
			}
		}
	}()
	// Let some Writes land first (a different point each round).
	eventually(t, "placing", func() bool { return e.qp.Stats().FPDUsReceived > uint64(10*round+1) || e.qp.State() != rdma.StateRTS })
	ctx := context.Background()
	if expired {
		c, cancel := context.WithCancel(ctx)
		cancel()
		ctx = c
	}
	var derr error
	if !returnsWithin(bound, func() { derr = e.table.Deregister(ctx, x) }) {
		t.Fatalf("Deregister has not returned after %v under a flood", bound)
	}
	snap := bytes.Clone(buf)
	// The peer keeps sending until the QP fails on the deregistered STag.
	select {
	case <-e.qp.Done():
	case <-time.After(bound):
		t.Fatalf("the QP did not fail on Writes to a deregistered STag (state %v)", e.qp.State())
	}
	e.closeWithin(t)
	cb.Close()
	<-flooding
	if !bytes.Equal(buf, snap) {
		n := 0
		for i := range buf {
			if buf[i] != snap[i] {
				n++
			}
		}
		t.Fatalf("round %d: %d octets of x changed after Deregister returned (%v)", round, n, derr)
	}
}
