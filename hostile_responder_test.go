package iwarp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/conform"
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// TestHostileResponderUnofferedExtension_LLP_0_0x04: a responder whose MPA
// Reply claims an RDMAP extension (RFC 7306) that our Connect did not
// offer. Connect fails, and our Initiator's first and only FPDU is the
// Terminate LLP/MPA 0x04 (invalid Reply), byte for byte, then it closes.
func TestHostileResponderUnofferedExtension_LLP_0_0x04(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		var h [mpa.HeaderLen]byte
		if _, err := io.ReadFull(nc, h[:]); err != nil {
			got <- nil
			return
		}
		if _, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint16(h[18:]))); err != nil {
			got <- nil
			return
		}
		blk := mpa.AppendIRDORD(nil, &mpa.IRDORD{IRD: 4, ORD: 4})
		reply := mpa.Frame{Reply: true, Flags: mpa.FlagCRC | mpa.FlagEnhanced | mpa.Flags(mpa.ExtRFC7306), Rev: 2, PrivateData: blk}
		if _, err := nc.Write(mpa.AppendFrame(nil, &reply)); err != nil {
			got <- nil
			return
		}
		rest, _ := io.ReadAll(nc) // until our side closes
		got <- rest
	}()
	ep := newEndpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = ep.qp.Connect(ctx, "tcp", ln.Addr().String(), &iwarp.ConnOptions{Interop: &iwarp.InteropOptions{HideExtensions: true, DisableP2P: true}})
	if err == nil {
		t.Fatal("Connect accepted a Reply with an extension it did not offer")
	}
	u := conform.TerminateULPDU(wire.RDMAPVersion1, rdma.TermLLPInvalidFrame, conform.AttachNone, conform.ULPDU{})
	want := conform.RawFPDU(true, u)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("our Initiator sent\n% x\nwant the Terminate FPDU\n% x", b, want)
	}
	var te *iwarp.TerminateError
	if !errors.As(err, &te) || !te.Sent || te.Code != iwarp.TermLLPInvalidFrame || !errors.Is(err, iwarp.ErrTerminated) {
		t.Fatalf("Connect error %v (%T), want a sent Terminate LLP/0/0x04", err, err)
	}
}
