package iwarp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/conform"
	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Regression tests for the defects an independent review of the engine
// reproduced (issue 17), numbered as the issue numbers them. The defects
// the old engine fixed are here; those the engine rebuild fixed are in
// defects_rebuild_test.go, and defect 8, which the public API cannot show,
// is internal/verbs' TestPostRecvDuringTeardown. docs/engine-rebuild.md has
// the table. Every wait is bounded by defectWait.

// defectWait bounds every wait of these tests: a hang fails the test.
const defectWait = 10 * time.Second

// scriptedPeer is a peer scripted byte by byte on a real connection: it
// runs the MPA startup as Initiator against a Listener that accepts the
// connection with the QP under test, then writes DDP segments and reads
// what the QP sends.
type scriptedPeer struct {
	nc  net.Conn
	mc  *mpa.Conn
	rv  uint8 // the RDMAP version in use
	msn [4]uint32
}

// dialScripted connects a scripted peer offering ext to qp, which accepts
// the connection with default options (CRC on, no peer-to-peer mode). The
// peer then sends a zero-length Write, so that qp may send (the MPA
// Responder waits for the Initiator's first FPDU, RFC 5044 §7.1.2).
func dialScripted(t *testing.T, qp *iwarp.QP, ext mpa.Ext) *scriptedPeer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), defectWait)
	defer cancel()
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			err = req.Accept(ctx, qp, nil)
		}
		accepted <- err
	}()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	cfg := mpa.DefaultConfig()
	cfg.CRC, cfg.P2P, cfg.IRD, cfg.ORD, cfg.Extensions = true, false, 4, 4, ext
	mc, err := mpa.Connect(ctx, nc, cfg)
	if err != nil {
		t.Fatalf("MPA startup: %v", err)
	}
	if err := <-accepted; err != nil {
		t.Fatalf("Accept: %v", err)
	}
	p := &scriptedPeer{nc: nc, mc: mc, rv: wire.RDMAPVersion1, msn: [4]uint32{1, 1, 1, 1}}
	if mc.Params().Extensions&mpa.ExtV2 != 0 {
		p.rv = wire.RDMAPVersion2
	}
	p.send(t, conform.Tagged(p.rv, wire.OpWrite, true, 1, 0, nil))
	return p
}

// nextMSN returns the next MSN of queue qn and counts it.
func (p *scriptedPeer) nextMSN(qn uint32) uint32 {
	m := p.msn[qn]
	p.msn[qn]++
	return m
}

// send frames u as one FPDU and writes it.
func (p *scriptedPeer) send(t *testing.T, u conform.ULPDU) {
	t.Helper()
	_ = p.nc.SetWriteDeadline(time.Now().Add(defectWait))
	w := p.mc.FPDU().Writer()
	if err := w.AppendCopy(u.Bytes); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("peer write: %v", err)
	}
}

// next reads the next ULPDU the QP sent: its bytes and their parse.
func (p *scriptedPeer) next() ([]byte, wire.ULPDU, error) {
	_ = p.nc.SetReadDeadline(time.Now().Add(defectWait))
	r := p.mc.FPDU().Reader()
	n, err := r.Next()
	if err != nil {
		return nil, wire.ULPDU{}, err
	}
	b := make([]byte, n)
	if err := r.Read(b); err != nil {
		return nil, wire.ULPDU{}, err
	}
	if err := r.End(); err != nil {
		return nil, wire.ULPDU{}, err
	}
	u, err := wire.ParseULPDU(b)
	if err != nil && u.Opcode != wire.OpTerminate {
		return b, u, fmt.Errorf("unparsable ULPDU % x: %w", b, err)
	}
	return b, u, nil
}

// nextOf reads until the QP sends a message with opcode op and returns it;
// a Terminate or the end of the stream first fails the test.
func (p *scriptedPeer) nextOf(t *testing.T, op wire.Opcode) wire.ULPDU {
	t.Helper()
	for {
		b, u, err := p.next()
		if err != nil {
			t.Fatalf("waiting for %v: %v", op, err)
		}
		if u.Opcode == op {
			return u
		}
		if u.Opcode == wire.OpTerminate {
			t.Fatalf("waiting for %v: Terminate % x", op, b)
		}
	}
}

// expectTerminate reads until the QP's Terminate and checks it is exactly
// the one RFC 5040 §4.8 builds for code with the DDP header of offending
// attached. Any message with an opcode in forbidden before it fails. The
// peer then closes the connection, which ends the QP's teardown drain.
func (p *scriptedPeer) expectTerminate(t *testing.T, code rdma.TermCode, offending conform.ULPDU, forbidden ...wire.Opcode) {
	t.Helper()
	want := conform.TerminateULPDU(p.rv, code, conform.AttachDDP, offending)
	for {
		b, u, err := p.next()
		if err != nil {
			t.Fatalf("no Terminate %v: %v", code, err)
		}
		for _, op := range forbidden {
			if u.Opcode == op {
				t.Fatalf("answered with %v before any Terminate: % x", op, b)
			}
		}
		if u.Opcode != wire.OpTerminate {
			continue
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("Terminate\n got % x\nwant % x (%v)", b, want, code)
		}
		p.nc.Close()
		return
	}
}

// apiCode is a wire Terminate code as the API reports it.
func apiCode(c rdma.TermCode) iwarp.TermCode {
	return c
}

// drainCQ waits until ep's QP is torn down and returns every completion
// left in its CQ.
func drainCQ(t *testing.T, ep *endpoint) []iwarp.Completion {
	t.Helper()
	select {
	case <-ep.qp.Done():
	case <-time.After(defectWait):
		t.Fatalf("QP not torn down (state %v)", ep.qp.State())
	}
	var all []iwarp.Completion
	out := make([]iwarp.Completion, 16)
	for n := ep.cq.Poll(out); n > 0; n = ep.cq.Poll(out) {
		all = append(all, out[:n]...)
	}
	return all
}

// TestDefect04SingleSegmentMessages: defect 4, single-segment messages
// (Read Request, Read V2 Request, Atomic Request and Response, Immediate
// Data) were accepted with L=0 or MO≠0: a Read Request at MO 7 was
// answered, Immediate Data with L=0 completed a receive, an Atomic
// Response with L=0 completed the atomic. RFC 7306 §8.2 has the DDP layer
// validate every segment field; such a message's only segment is both its
// first (MO 0) and its last (L=1). Now an MO≠0 is Terminate DDP/2/0x04
// (invalid MO) and L=0 is Terminate DDP/2/0x05 (message too long: it would
// run past its fixed size), each with the DDP header attached
// (docs/wire.md), and the message is not acted on.
func TestDefect04SingleSegmentMessages(t *testing.T) {
	shapes := []struct {
		name string
		last bool
		mo   uint32
		code rdma.TermCode
	}{
		{"L=0", false, 0, rdma.TermDDPTooLong},
		{"MO=8", true, 8, rdma.TermDDPInvalidMO},
	}
	for _, m := range singleSegmentMessages() {
		for _, s := range shapes {
			t.Run(m.name+"/"+s.name, func(t *testing.T) {
				ep := newEndpoint(t)
				defer ep.qp.Close()
				sent := m.run(t, ep, s.last, s.mo)
				sent.p.expectTerminate(t, s.code, sent.offending, sent.forbidden...)
				ctx, cancel := context.WithTimeout(context.Background(), defectWait)
				defer cancel()
				wantTerminated(t, ctx, ep, true, apiCode(s.code))
				if cs := drainCQ(t, ep); sent.check != nil {
					sent.check(t, cs)
				}
			})
		}
	}
}

// singleSent is what a case of TestDefect04SingleSegmentMessages sent.
type singleSent struct {
	p         *scriptedPeer
	offending conform.ULPDU
	// forbidden are the opcodes the QP must not answer with.
	forbidden []wire.Opcode
	// check, if set, runs after the QP's teardown with its completions.
	check func(t *testing.T, cs []iwarp.Completion)
}

// singleMessage sets an endpoint up and makes a scripted peer send one
// single-segment message with the given L bit and MO.
type singleMessage struct {
	name string
	run  func(t *testing.T, ep *endpoint, last bool, mo uint32) singleSent
}

func singleSegmentMessages() []singleMessage {
	return []singleMessage{
		{"Read-Request", func(t *testing.T, ep *endpoint, last bool, mo uint32) singleSent {
			src, _ := ep.pd.RegisterMemory(bytes.Repeat([]byte{7}, 64), iwarp.AccessRemoteRead)
			p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
			rr := wire.ReadRequest{SinkSTag: 0x1234, Size: 8, SrcSTag: src.STag(), SrcTO: 0}
			u := conform.Untagged(p.rv, wire.OpReadRequest, last, wire.QNReadReq, p.nextMSN(wire.QNReadReq), mo, wire.AppendReadRequest(nil, &rr))
			p.send(t, u)
			return singleSent{p: p, offending: u, forbidden: []wire.Opcode{wire.OpReadResponse}}
		}},
		{"Read-V2-Request", func(t *testing.T, ep *endpoint, last bool, mo uint32) singleSent {
			src, _ := ep.pd.RegisterMemory(bytes.Repeat([]byte{7}, 64), iwarp.AccessRemoteRead)
			p := dialScripted(t, ep.qp, mpa.ExtRFC7306|mpa.ExtV2)
			rr := wire.ReadV2Request{Size: 8, SrcSTag: src.STag(), SrcTO: 0}
			u := conform.Untagged(p.rv, wire.OpReadV2Request, last, wire.QNReadReq, p.nextMSN(wire.QNReadReq), mo, wire.AppendReadV2Request(nil, &rr))
			p.send(t, u)
			return singleSent{p: p, offending: u, forbidden: []wire.Opcode{wire.OpReadV2Response}}
		}},
		{"Atomic-Request", func(t *testing.T, ep *endpoint, last bool, mo uint32) singleSent {
			buf := alignedBuf(8)
			binary.NativeEndian.PutUint64(buf, 41) // before registration
			target, _ := ep.pd.RegisterMemory(buf, iwarp.AccessRemoteAtomic)
			p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
			ar := conform.FetchAdd(9, target.STag(), 0, 1)
			u := conform.Untagged(p.rv, wire.OpAtomicRequest, last, wire.QNReadReq, p.nextMSN(wire.QNReadReq), mo, wire.AppendAtomicRequest(nil, &ar))
			p.send(t, u)
			return singleSent{p: p, offending: u, forbidden: []wire.Opcode{wire.OpAtomicResponse}, check: func(t *testing.T, _ []iwarp.Completion) {
				if v, _ := target.AtomicLoad(0); v != 41 {
					t.Errorf("the target word is %d: the atomic ran", v)
				}
			}}
		}},
		{"Immediate-Data", func(t *testing.T, ep *endpoint, last bool, mo uint32) singleSent {
			rb, _ := ep.pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
			if err := ep.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{rb.SGE(0, 64)}}); err != nil {
				t.Fatal(err)
			}
			p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
			u := conform.Untagged(p.rv, wire.OpImmediate, last, wire.QNSend, p.nextMSN(wire.QNSend), mo, binary.BigEndian.AppendUint64(nil, 0x1122334455667788))
			p.send(t, u)
			return singleSent{p: p, offending: u, check: func(t *testing.T, cs []iwarp.Completion) {
				if len(cs) != 1 || cs[0].ID != 1 || cs[0].Status != iwarp.StatusFlushed {
					t.Errorf("receive completions %+v, want the receive flushed", cs)
				}
			}}
		}},
		{"Atomic-Response", func(t *testing.T, ep *endpoint, last bool, mo uint32) singleSent {
			p := dialScripted(t, ep.qp, mpa.ExtRFC7306)
			if err := ep.qp.PostSend(iwarp.SendWR{ID: 2, Op: iwarp.OpFetchAdd, Flags: iwarp.Signaled, Remote: iwarp.RemoteBuffer{STag: 0x5500, TO: 0x1000, Len: 8}, Add: 1}); err != nil {
				t.Fatal(err)
			}
			req := p.nextOf(t, wire.OpAtomicRequest)
			resp := wire.AtomicResponse{RequestID: req.AtomicRequest.RequestID, OriginalValue: 41}
			u := conform.Untagged(p.rv, wire.OpAtomicResponse, last, wire.QNResponse, p.nextMSN(wire.QNResponse), mo, wire.AppendAtomicResponse(nil, &resp))
			p.send(t, u)
			return singleSent{p: p, offending: u, check: func(t *testing.T, cs []iwarp.Completion) {
				if len(cs) != 1 || cs[0].ID != 2 || cs[0].Status == iwarp.StatusSuccess {
					t.Errorf("the FetchAdd's completions %+v, want one, not successful", cs)
				}
			}}
		}},
	}
}

// TestDefect09ConcurrentCloseNeverConnected: defect 9, two concurrent
// Close calls on a QP that never connected panicked with "close of closed
// channel": both found the QP not yet torn down, and both flushed it and
// closed its done channel. Close is documented as safe to call more than
// once; concurrent calls must all return once the QP is torn down, with
// every posted receive flushed once.
func TestDefect09ConcurrentCloseNeverConnected(t *testing.T) {
	const (
		rounds = 500
		recvs  = 16
	)
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.NewCQ(recvs+1, nil)
	if err != nil {
		t.Fatal(err)
	}
	wrs := make([]iwarp.RecvWR, recvs)
	for i := range wrs {
		wrs[i].ID = uint64(i)
	}
	out := make([]iwarp.Completion, recvs+1)
	for round := 0; round < rounds; round++ {
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 1, RecvQueueDepth: recvs})
		if err != nil {
			t.Fatal(err)
		}
		if err := qp.PostRecv(wrs...); err != nil {
			t.Fatal(err)
		}
		// One Close on another goroutine, already running when the test's
		// own Close starts: both run at once.
		var ready, fire atomic.Bool
		panics := make(chan any, 2)
		closeQP := func() {
			defer func() {
				if r := recover(); r != nil {
					panics <- r
				}
			}()
			_ = qp.Close()
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready.Store(true)
			for !fire.Load() {
				_ = qp.State() // keeps the QP's lock busy: widens the window
			}
			closeQP()
		}()
		for !ready.Load() {
			runtime.Gosched()
		}
		fire.Store(true)
		closeQP()
		wg.Wait()
		select {
		case r := <-panics:
			t.Fatalf("round %d: concurrent Close panicked: %v", round, r)
		default:
		}
		select {
		case <-qp.Done():
		default:
			t.Fatalf("round %d: Close returned before the QP was torn down", round)
		}
		if n := cq.Poll(out); n != recvs {
			t.Fatalf("round %d: %d receives flushed, want %d", round, n, recvs)
		}
	}
}

// TestDefect10ReadV2ResponseCutShort: defect 10, a connection error inside
// a Read V2 Response (the stream ending inside its FPDU) was reported as
// the peer's protocol violation "Read V2 Response longer than requested",
// and a Terminate DDP/2/0x05 went to the peer. It must be reported as what
// it is, as for the same cut inside a Read Response: the stream ended
// inside an FPDU (LLP/0/0x01).
func TestDefect10ReadV2ResponseCutShort(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		name := map[bool]string{false: "Read", true: "ReadV2"}[v2]
		t.Run(name, func(t *testing.T) {
			ep := newEndpoint(t)
			defer ep.qp.Close()
			sink, _ := ep.pd.RegisterMemory(make([]byte, 4096), iwarp.AccessLocalWrite)
			p := dialScripted(t, ep.qp, mpa.ExtRFC7306|mpa.ExtV2)
			wr := iwarp.SendWR{ID: 1, Op: iwarp.OpRead, Flags: iwarp.Signaled, SGL: []iwarp.SGE{sink.SGE(0, 4096)}, Remote: iwarp.RemoteBuffer{STag: 0x5500, Len: 4096}}
			var hdr []byte
			if v2 {
				wr.Op = iwarp.OpReadV2
				if err := ep.qp.PostSend(wr); err != nil {
					t.Fatal(err)
				}
				p.nextOf(t, wire.OpReadV2Request)
				hdr = conform.Untagged(p.rv, wire.OpReadV2Response, true, wire.QNResponse, p.nextMSN(wire.QNResponse), 0, nil).Bytes
			} else {
				if err := ep.qp.PostSend(wr); err != nil {
					t.Fatal(err)
				}
				p.nextOf(t, wire.OpReadRequest)
				hdr = conform.Tagged(p.rv, wire.OpReadResponse, true, sink.STag(), 0, nil).Bytes
			}
			// An FPDU announcing 4096 octets of payload: 100 arrive, then
			// the peer's side of the stream ends.
			b := binary.BigEndian.AppendUint16(nil, uint16(len(hdr)+4096))
			b = append(append(b, hdr...), make([]byte, 100)...)
			if _, err := p.nc.Write(b); err != nil {
				t.Fatal(err)
			}
			if err := p.nc.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			for {
				raw, u, err := p.next()
				if err != nil {
					break // the QP closed the connection
				}
				if u.Opcode == wire.OpTerminate {
					tm, _ := wire.ParseTerminate(raw[u.DDP.Len():])
					if tm.Code != rdma.TermLLPConnLost {
						t.Errorf("the peer was sent Terminate %v for a stream that ended inside an FPDU", tm.Code)
					}
				}
			}
			cs := drainCQ(t, ep)
			err := ep.qp.Err()
			var te *iwarp.TerminateError
			if !errors.As(err, &te) || te.Code != iwarp.TermLLPConnLost || !errors.Is(err, fpdu.ErrTruncated) || strings.Contains(err.Error(), "longer than requested") {
				t.Errorf("QP error %v, want the stream's end inside an FPDU (LLP/0/0x01)", err)
			}
			if len(cs) != 1 || cs[0].ID != 1 || cs[0].Status == iwarp.StatusSuccess {
				t.Errorf("the Read's completions %+v, want one, not successful", cs)
			}
		})
	}
}

// TestDefect11ContinuingSegmentOpcode: defect 11, a V2 Send with Immediate
// whose last segment was a plain Send segment completed with success and
// no immediate data: a continuing segment's opcode was not compared with
// the first segment's. Every segment of a message carries its opcode
// (RFC 5041 §5, RFC 5040 §4.2; the V2 draft's Appendix A.3: the L=1
// segment of a Send with Immediate is its immediate segment); a segment
// whose opcode differs is Terminate RDMAP/2/0x06 (unexpected opcode, the
// DDP header attached; docs/wire.md) and the receive does not complete
// successfully.
func TestDefect11ContinuingSegmentOpcode(t *testing.T) {
	cases := []struct {
		name        string
		ext         mpa.Ext
		first, last wire.Opcode
		lastPayload []byte
	}{
		{"Send-with-Immediate-ended-by-Send", mpa.ExtRFC7306 | mpa.ExtV2, wire.OpSendImm, wire.OpSend, []byte("efgh")},
		{"Send-ended-by-Send-with-Immediate", mpa.ExtRFC7306 | mpa.ExtV2, wire.OpSend, wire.OpSendImm, make([]byte, 8)},
		{"Send-ended-by-Send-with-SE", 0, wire.OpSend, wire.OpSendSE, []byte("efgh")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ep := newEndpoint(t)
			defer ep.qp.Close()
			rb, _ := ep.pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
			if err := ep.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{rb.SGE(0, 64)}}); err != nil {
				t.Fatal(err)
			}
			p := dialScripted(t, ep.qp, c.ext)
			msn := p.nextMSN(wire.QNSend)
			p.send(t, conform.Untagged(p.rv, c.first, false, wire.QNSend, msn, 0, []byte("abcd")))
			offending := conform.Untagged(p.rv, c.last, true, wire.QNSend, msn, 4, c.lastPayload)
			p.send(t, offending)
			p.expectTerminate(t, rdma.TermRDMAPUnexpectedOpcode, offending)
			ctx, cancel := context.WithTimeout(context.Background(), defectWait)
			defer cancel()
			wantTerminated(t, ctx, ep, true, iwarp.TermRDMAPUnexpectedOpcode)
			if cs := drainCQ(t, ep); len(cs) != 1 || cs[0].ID != 1 || cs[0].Status != iwarp.StatusFlushed {
				t.Errorf("receive completions %+v, want the receive flushed", cs)
			}
		})
	}
}
