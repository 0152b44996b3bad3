package mpa

import (
	"bytes"
	"io"
	"testing"
)

// TestInitiatorRequestsLikeSiw: configured as the siw initiators of
// siw_mpa_request.hex were, our Initiator sends their exact Requests.
func TestInitiatorRequestsLikeSiw(t *testing.T) {
	cfgs := []*Config{
		{IRD: 1, ORD: 1, NoAdvertise: true},                                          // rping
		{IRD: 128, ORD: 128, NoAdvertise: true},                                      // rdma_client
		{IRD: 0, ORD: 0, NoAdvertise: true},                                          // ib_send_bw
		{IRD: 1, ORD: 1, P2P: true, OfferRTR: RTRWrite | RTRRead, NoAdvertise: true}, // p2p build
		{IRD: 1, ORD: 1, CRC: true, NoAdvertise: true},                               // crc build
		{Rev: 1, NoAdvertise: true},                                                  // v1 build
	}
	reqs := siwRequests(t)
	if len(reqs) != len(cfgs) {
		t.Fatalf("%d Requests, %d configurations", len(reqs), len(cfgs))
	}
	for i, cfg := range cfgs {
		if err := cfg.check(true); err != nil {
			t.Fatal(err)
		}
		hdr, b := RequestFrame(cfg)
		if got := appendFrameBlock(nil, hdr, &b, nil); !bytes.Equal(got, reqs[i].b) {
			t.Errorf("%s: ours %x\n                 siw's %x", reqs[i].name, got, reqs[i].b)
		}
	}
}

// TestInitiatorRTRLikeSiw: given the Reply of siw's P2P responder, our
// Initiator (configured as siw's P2P build) sends siw's RTR byte for byte.
func TestInitiatorRTRLikeSiw(t *testing.T) {
	siwReply := hexBytes(t, "4d 50 41 20 49 44 20 52 65 70 20 46 72 61 6d 65 10 02 00 04 80 01 80 01")
	cc, sc := tcpPair(t)
	got := make(chan []byte, 1)
	go func() {
		req := make([]byte, HeaderLen+IRDORDLen)
		_, _ = io.ReadFull(sc, req)
		_, _ = sc.Write(siwReply)
		rtr := make([]byte, 20)
		_, _ = io.ReadFull(sc, rtr)
		got <- rtr
	}()
	cfg := &Config{IRD: 1, ORD: 1, P2P: true, OfferRTR: RTRWrite | RTRRead, NoAdvertise: true}
	c, err := Connect(testCtx(t), cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if want := hexBytes(t, siwP2PRTR); !bytes.Equal(<-got, want) {
		t.Errorf("RTR differs from siw's %x", want)
	}
	if p := c.Params(); !p.P2P || p.RTR != RTRWrite || p.IRD != 1 || p.ORD != 1 || p.CRC {
		t.Errorf("params %+v", p)
	}
}
