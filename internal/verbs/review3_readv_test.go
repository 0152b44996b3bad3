//go:build linux && !iwarp_portable

package verbs

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/testnet"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// review3Modes are the receive paths a QP's octets take: a receive
// goroutine per QP (no poller: rxWaiting), the Device's poller (rxPoll),
// and, with a poller, a goroutine blocked in CQ.Wait on a CQ only this QP
// feeds, which reads the socket itself (waitReading).
var review3Modes = []struct {
	name           string
	noPoll, waiter bool
}{
	{"goroutine", true, false},
	{"poller", false, false},
	{"poller+reading-waiter", false, true},
}

// review3End is newEnd with a MaxSGE of the test's choosing (newEnd's is 4).
func review3End(t testing.TB, o opts, maxSGE int) *end {
	t.Helper()
	dev, err := NewDevice(DeviceConfig{NoPoll: o.noPoll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	e := &end{dev: dev, table: mem.NewTable(mem.TableOptions{})}
	e.cq = NewCQ(o.sq+o.rq, nil)
	e.qp, err = New(dev, Config{Table: e.table, PD: testPD, SendCQ: e.cq, RecvCQ: e.cq,
		SQDepth: o.sq, RQDepth: o.rq, MaxSGE: maxSGE, MaxInline: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.qp.Close() })
	return e
}

// review3Parked reports whether a goroutine whose stack holds every one
// of frames is parked in the runtime's network poller.
func review3Parked(frames ...string) bool { return review5Blocked("IO wait", frames, nil) }

// review3Waiter starts a goroutine waiting in e's CQ.Wait and returns once
// it is parked reading the QP's socket itself (waitReading). The wait ends
// with the test.
func review3Waiter(t *testing.T, e *end) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*bound)
	done := make(chan error, 1)
	go func() { done <- e.cq.Wait(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	eventually(t, "a waiter reading the socket", func() bool {
		return review3Parked(fmt.Sprintf("verbs.(*CQ).Wait(%p", e.cq), "verbs.(*QP).waitReading(")
	})
}

// review3Next returns e's next completion without waiting in the CQ.
func review3Next(t *testing.T, e *end) CQE {
	t.Helper()
	var out [1]CQE
	eventually(t, "a completion", func() bool { return e.cq.Poll(out[:]) == 1 })
	return out[0]
}

// TestReview3ReadvIOVMax: a receive of 2048 SGEs of 8 octets each (MaxSGE
// 2048 is accepted), filled by one Send of 16 KiB that follows a large
// Write (after a large FPDU the Decoder stages only a next FPDU's first
// octets, so the Send's payload is read straight into the receive's
// pieces). Core.RxBufs (fpdu.Decoder.Bufs) hands out every remaining piece
// of the PlaceV destination, then the staging buffer: some 2000 slices,
// with no bound. rawReadv (rawread_linux.go) passes them all to one
// readv(2), which fails with EINVAL beyond IOV_MAX (1024): the QP fails
// with "read: invalid argument" and the receive is flushed. That is the
// path of the receive goroutine (no poller) and of a goroutine waiting in
// CQ.Wait that reads the socket itself (waitReading); the poller's
// Handle.Readv clamps to IOV_MAX (its n < want then only costs a re-arm),
// and the race build's rawReadv reads piece by piece: those pass.
func TestReview3ReadvIOVMax(t *testing.T) {
	for _, m := range review3Modes {
		t.Run(m.name, func(t *testing.T) {
			o := defaultOpts()
			o.noPoll, o.sq, o.rq = m.noPoll, 4, 4
			const pieces, size = 2048, 8
			e := review3End(t, o, pieces)
			ca, cb := testnet.TCPPair(t)
			e.start(t, ca, o)
			p := newPeer(t, cb)

			target := e.register(t, make([]byte, 65000), mem.AccessRemoteWrite)
			rb := e.register(t, make([]byte, pieces*size), mem.AccessLocalWrite)
			sgl := make([]rdma.SGE, pieces)
			for i := range sgl {
				sgl[i] = rdma.SGE{STag: uint32(rb.STag()), Offset: uint64(i * size), Length: size}
			}
			e.postRecv(t, rdmap.RecvWR{ID: 1, SGL: sgl})

			big := bytes.Repeat([]byte{0xAB}, 65000)
			payload := make([]byte, pieces*size)
			for i := range payload {
				payload[i] = byte(i*31 + i>>8)
			}
			if m.waiter {
				review3Waiter(t, e)
			}
			p.send(tagged(wire.OpWrite, uint32(target.STag()), target.Base(), big))
			p.sendMsg(wire.OpSend, 0, payload)

			c := review3Next(t, e)
			if c.ID != 1 || c.Status != rdma.StatusSuccess {
				t.Fatalf("receive completed %+v (QP state %v, error %v), want success", c.Completion, e.qp.State(), e.qp.Err())
			}
			if !bytes.Equal(rb.Bytes(), payload) {
				t.Fatal("the Send's payload was not placed")
			}
		})
	}
}
