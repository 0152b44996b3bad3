package engine

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// rawSide is a QP under test with a scripted raw peer.
func rawSide(t *testing.T, o pairOpts, setup func(a *side)) (*side, *rawPeer) {
	t.Helper()
	ca, cb := tcpPair(t)
	a := newSide(t, o, ca)
	if setup != nil {
		setup(a)
	}
	a.start(t, o)
	t.Cleanup(func() { _ = a.qp.Close(); cb.Close() })
	return a, &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{CRC: o.crc})}
}

// readUntilTerminate reads FPDUs, skipping others, until a Terminate; it
// returns the Terminate and the ULPDU bytes it skipped.
func (p *rawPeer) readUntilTerminate(t *testing.T) (term []byte, skipped int) {
	t.Helper()
	for {
		u := p.readULPDU(t)
		if u[0]&0x80 == 0 && u[1]&0x0f == 7 {
			return u, skipped
		}
		skipped += len(u)
	}
}

func assertTerminate(t *testing.T, got []byte, code wire.TermCode, offending []byte, ddpLen int, rdma bool) {
	t.Helper()
	if want := wantTerminate(code, offending, ddpLen, rdma); !bytes.Equal(got, want) {
		t.Fatalf("Terminate bytes\n got % x\nwant % x", got, want)
	}
}

func TestTerminateNoRecvBuffer_DDP_2_0x02(t *testing.T) {
	o := pairOpts{crc: true}
	a, peer := rawSide(t, o, func(a *side) {
		r, _, _ := a.register(t, 64, mem.AccessLocalWrite)
		if _, err := a.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: r, Len: 64}}}}); err != nil {
			t.Fatal(err)
		}
	})
	peer.send(t, cat(untagged(3, true, 0, 0, 1, 0), []byte("first")))
	second := cat(untagged(3, true, 0, 0, 2, 0), []byte("second"))
	peer.send(t, second)
	got, _ := peer.readUntilTerminate(t)
	assertTerminate(t, got, wire.TermDDPNoBuffer, second, 18, false)
	if c := waitCQE(t, a.rcq); c.Status != StatusSuccess || c.Len != 5 {
		t.Fatalf("the first Send's completion %+v", c)
	}
}

func TestTerminateReadRequestMSN_DDP_2_0x03(t *testing.T) {
	o := pairOpts{crc: true, ird: 2}
	var src *mem.Region
	_, peer := rawSide(t, o, func(a *side) { src, _, _ = a.registerFilled(t, 64, mem.AccessRemoteRead, 1) })
	bad := cat(untagged(1, true, 0, 1, 5, 0), readReqHdr(9, 0, 8, uint32(src.STag()), src.Base()))
	peer.send(t, bad)
	got, _ := peer.readUntilTerminate(t)
	assertTerminate(t, got, wire.TermDDPMSNRange, bad, 18, true)
}

// TestTerminateIRDExceeded_RDMAP_2_0x07: a second Read Request while the
// first one's (large) response is still being sent exceeds IRD 1. The
// Terminate goes out at the next FPDU boundary, long before the 32 MiB
// response would have ended.
func TestTerminateIRDExceeded_RDMAP_2_0x07(t *testing.T) {
	o := pairOpts{crc: true, ird: 1}
	const big = 32 << 20
	var src *mem.Region
	_, peer := rawSide(t, o, func(a *side) { src, _, _ = a.registerFilled(t, big, mem.AccessRemoteRead, 1) })
	peer.send(t, cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(9, 0, big, uint32(src.STag()), src.Base())))
	time.Sleep(50 * time.Millisecond) // the response is under way, stuck on the unread socket
	second := cat(untagged(1, true, 0, 1, 2, 0), readReqHdr(9, 0, 8, uint32(src.STag()), src.Base()))
	peer.send(t, second)
	got, skipped := peer.readUntilTerminate(t)
	assertTerminate(t, got, wire.TermRDMAPStreamCatastroph, second, 18, true)
	if skipped >= big {
		t.Fatalf("the Terminate waited for the whole response (%d bytes)", skipped)
	}
}

// TestTerminateReadResponseOutsideSink_DDP_1_0x01: a Read Response aimed
// past the outstanding Read's sink range is refused and nothing is placed.
func TestTerminateReadResponseOutsideSink_DDP_1_0x01(t *testing.T) {
	o := pairOpts{crc: true, ord: 1}
	var sink *mem.Region
	var all []byte
	a, peer := rawSide(t, o, func(a *side) { sink, _, all = a.register(t, 64, mem.AccessLocalWrite) })
	if _, err := a.qp.PostSend([]SendWR{{ID: 3, Op: OpRead, Flags: Signaled, SGL: []SGE{{Region: sink, Len: 64}}, RemoteSTag: 77}}); err != nil {
		t.Fatal(err)
	}
	rr := peer.readULPDU(t)
	sinkSTag, sinkTO := be32at(rr, 18), be64at(rr, 22)
	bad := cat(tagged(2, true, sinkSTag, sinkTO+32), make([]byte, 64))
	peer.send(t, bad)
	got, _ := peer.readUntilTerminate(t)
	assertTerminate(t, got, wire.TermDDPBaseBounds, bad, 14, false)
	<-a.qp.Done()
	if c := waitCQE(t, a.scq); c.ID != 3 || c.Status == StatusSuccess {
		t.Fatalf("the Read completed %+v", c)
	}
	checkCanaries(t, all, 64)
}

// TestTerminateReadResponseWrongSTag_DDP_1_0x00: a Read Response to an STag
// other than the outstanding Read's sink is refused, even a valid one.
func TestTerminateReadResponseWrongSTag_DDP_1_0x00(t *testing.T) {
	o := pairOpts{crc: true, ord: 1}
	var sink, other *mem.Region
	a, peer := rawSide(t, o, func(a *side) {
		sink, _, _ = a.register(t, 64, mem.AccessLocalWrite)
		other, _, _ = a.register(t, 64, mem.AccessLocalWrite|mem.AccessRemoteWrite)
	})
	if _, err := a.qp.PostSend([]SendWR{{ID: 3, Op: OpRead, Flags: Signaled, SGL: []SGE{{Region: sink, Len: 64}}, RemoteSTag: 77}}); err != nil {
		t.Fatal(err)
	}
	peer.readULPDU(t)
	bad := cat(tagged(2, true, uint32(other.STag()), other.Base()), make([]byte, 64))
	peer.send(t, bad)
	got, _ := peer.readUntilTerminate(t)
	assertTerminate(t, got, wire.TermDDPInvalidSTag, bad, 14, false)
	<-a.qp.Done()
}

// TestTerminateWhilePeerStreams: the offending peer receives our Terminate
// even while it keeps streaming a large Write at us without reading.
func TestTerminateWhilePeerStreams(t *testing.T) {
	o := pairOpts{crc: true}
	var dst *mem.Region
	a, peer := rawSide(t, o, func(a *side) { dst, _, _ = a.register(t, 1<<20, mem.AccessRemoteWrite) })
	bad := cat(tagged(0, true, uint32(dst.STag())^0x55, dst.Base()), make([]byte, 1000))
	stop := make(chan struct{})
	streamed := make(chan error, 1)
	go func() {
		// One bad segment, then a stream of (valid-looking) Write
		// segments that never stops on its own.
		w := peer.fc.Writer()
		if err := w.WriteFPDU(bad); err != nil {
			streamed <- err
			return
		}
		seg := cat(tagged(0, false, uint32(dst.STag()), dst.Base()), make([]byte, 60000))
		for {
			select {
			case <-stop:
				streamed <- nil
				return
			default:
			}
			if err := w.WriteFPDU(seg); err != nil {
				streamed <- nil // the QP closed the connection: expected
				return
			}
		}
	}()
	got, _ := peer.readUntilTerminate(t)
	close(stop)
	assertTerminate(t, got, wire.TermDDPInvalidSTag, bad, 14, false)
	<-a.qp.Done()
	if err := <-streamed; err != nil {
		t.Fatal(err)
	}
	var te *TerminateError
	if !errors.As(a.qp.Err(), &te) || te.Code != wire.TermDDPInvalidSTag {
		t.Fatalf("QP error %v", a.qp.Err())
	}
}

// TestSendInvalidateTerminates: a Send with Invalidate naming an STag that
// cannot be invalidated: RDMAP 0x09 with error type 1 (remote protection)
// for an access failure and type 2 (remote operation) otherwise, as siw.
func TestSendInvalidateTerminates(t *testing.T) {
	cases := []struct {
		name string
		pick func(ok, plain, other, dead *mem.Region) uint32
		code wire.TermCode
	}{
		{"unknown-STag/RDMAP-2-0x09", func(ok, plain, other, dead *mem.Region) uint32 { return uint32(ok.STag()) ^ 0x100 }, wire.TermRDMAPOpInvalidate},
		{"already-invalid/RDMAP-2-0x09", func(ok, plain, other, dead *mem.Region) uint32 { return uint32(dead.STag()) }, wire.TermRDMAPOpInvalidate},
		{"other-PD/RDMAP-1-0x09", func(ok, plain, other, dead *mem.Region) uint32 { return uint32(other.STag()) }, wire.TermRDMAPProtInvalidate},
		{"not-invalidatable/RDMAP-1-0x09", func(ok, plain, other, dead *mem.Region) uint32 { return uint32(plain.STag()) }, wire.TermRDMAPProtInvalidate},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := pairOpts{crc: true}
			var ok, plain, other, dead *mem.Region
			a, peer := rawSide(t, o, func(a *side) {
				ok, _, _ = a.register(t, 64, mem.AccessRemoteWrite|mem.AccessRemoteInvalidate)
				plain, _, _ = a.register(t, 64, mem.AccessRemoteWrite)
				dead, _, _ = a.register(t, 64, mem.AccessRemoteWrite|mem.AccessRemoteInvalidate)
				if err := a.table.Invalidate(t.Context(), dead); err != nil {
					t.Fatal(err)
				}
				var err error
				other, err = a.table.Register(a.pd+1, make([]byte, 64), mem.AccessRemoteInvalidate, 0)
				if err != nil {
					t.Fatal(err)
				}
				r, _, _ := a.register(t, 64, mem.AccessLocalWrite)
				if _, err := a.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: r, Len: 64}}}}); err != nil {
					t.Fatal(err)
				}
			})
			bad := cat(untagged(4, true, c.pick(ok, plain, other, dead), 0, 1, 0), []byte("bye"))
			peer.send(t, bad)
			got, _ := peer.readUntilTerminate(t)
			assertTerminate(t, got, c.code, bad, 18, false)
			<-a.qp.Done()
			if !ok.Valid() || !plain.Valid() || !other.Valid() {
				t.Fatal("a refused invalidation invalidated something")
			}
		})
	}
}
