package mpa

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// TestInitiatorReadRTRResponse: the Initiator checks the Read RTR's
// response, answers a wrong one with Terminate 0x07 and reports a
// Terminate from the Responder.
func TestInitiatorReadRTRResponse(t *testing.T) {
	rtrResp := func(stag uint32, payload ...byte) []byte {
		u := appendRTRResponse(nil, &wire.ReadRequest{SinkSTag: stag}, 1)
		return fpduBytes(append(u, payload...), false)
	}
	cases := []struct {
		name      string
		response  []byte
		want      error
		terminate []byte
	}{
		{"good", rtrResp(0), nil, nil},
		{"wrong sink STag", rtrResp(5), ErrBadRTR, terminateFPDU(0x07, false)},
		{"with payload", rtrResp(0, 1, 2, 3, 4), ErrBadRTR, terminateFPDU(0x07, false)},
		{"a Write instead", fpduBytes(appendRTR(nil, RTRWrite, 1), false), ErrBadRTR, terminateFPDU(0x07, false)},
		{"Terminate", terminateFPDU(0x06, false), &PeerTerminateError{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc, sc := tcpPair(t)
			got := make(chan []byte, 1)
			go func() {
				req := make([]byte, HeaderLen+IRDORDLen)
				_, _ = io.ReadFull(sc, req)
				_, _ = sc.Write(rawFrame(true, FlagEnhanced, 2, blk(true, RTRRead, 1, 1), ""))
				rtr := make([]byte, len(fpduBytes(appendRTR(nil, RTRRead, 1), false)))
				_, _ = io.ReadFull(sc, rtr)
				if string(rtr) != string(fpduBytes(appendRTR(nil, RTRRead, 1), false)) {
					got <- []byte("bad RTR")
					return
				}
				_, _ = sc.Write(c.response)
				got <- readAllBounded(sc)
				sc.Close()
			}()
			cfg := &Config{P2P: true, OfferRTR: RTRRead, IRD: 1, ORD: 0}
			conn, err := Connect(testCtx(t), cc, cfg)
			switch c.want.(type) {
			case nil:
				if err != nil {
					t.Fatal(err)
				}
				p := conn.Params()
				if p.RTR != RTRRead || !p.RTRCredit || p.ORD != 0 || p.SendMSN(wire.QNReadReq) != 2 {
					t.Errorf("params %+v", p)
				}
				conn.Close()
			case *PeerTerminateError:
				var pt *PeerTerminateError
				if !errors.As(err, &pt) || !strings.Contains(pt.Error(), "Terminate") {
					t.Fatalf("Connect = %v", err)
				}
			default:
				if !errors.Is(err, c.want) {
					t.Fatalf("Connect = %v, want %v", err, c.want)
				}
			}
			if b := <-got; string(b) != string(c.terminate) {
				t.Errorf("Responder got %x, want %x", b, c.terminate)
			}
		})
	}
}

// TestAcceptChecksConfig: Accept refuses a bad configuration before
// answering, and can then be called again.
func TestAcceptChecksConfig(t *testing.T) {
	cc, sc := tcpPair(t)
	_, _ = cc.Write(rawFrame(false, FlagEnhanced, 2, blk(false, 0, 3, 5), "hi"))
	req, err := ReadRequest(testCtx(t), sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := req.IRDORD(); !ok || b.IRD != 3 || b.ORD != 5 || string(req.PrivateData()) != "hi" {
		t.Errorf("Request block %+v %v, pd %q", b, ok, req.PrivateData())
	}
	if _, err := req.Accept(testCtx(t), &Config{PrivateData: make([]byte, 509)}); err == nil {
		t.Error("509 bytes after the block accepted")
	}
	if _, err := req.Accept(testCtx(t), &Config{IRD: 0x4000}); err == nil {
		t.Error("IRD 0x4000 accepted")
	}
	if err := req.Reject(make([]byte, 509)); err == nil {
		t.Error("Reject with 509 bytes after the block accepted")
	}
	c, err := req.Accept(testCtx(t), &Config{PrivateData: make([]byte, 508)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep := make([]byte, HeaderLen+IRDORDLen+508)
	if _, err := io.ReadFull(cc, rep); err != nil {
		t.Fatal(err)
	}
	if f, _, err := ParseFrame(rep, 0); err != nil || len(f.ULPData()) != 508 {
		t.Errorf("Reply: %v", err)
	}
}

func TestErrorStrings(t *testing.T) {
	te := &TimeoutError{Stage: stageRTR}
	if !strings.Contains(te.Error(), stageRTR) {
		t.Error(te.Error())
	}
	pt := &PeerTerminateError{Code: rdma.TermLLPCRC}
	if !strings.Contains(pt.Error(), "0x02") {
		t.Error(pt.Error())
	}
}
