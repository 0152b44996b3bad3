package mpa

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
)

// TestConnectRev1Fallback: a Responder that closes on a Rev 2 Request (as
// irdma and cxgb4 do with a Rev they do not know) gets a Rev 1 Request on
// a fresh connection.
func TestConnectRev1Fallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx := testCtx(t)
	revs := make(chan uint8, 2)
	go func() {
		for {
			sc, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := ReadRequest(ctx, sc, nil)
			if err != nil {
				return
			}
			revs <- req.Rev()
			if req.Rev() != Rev1 {
				sc.Close() // a Rev 1 only peer
				continue
			}
			if c, err := req.Accept(ctx, &Config{}); err == nil {
				defer c.Close()
			}
		}
	}()
	dial := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}
	c, err := ConnectRev1Fallback(ctx, dial, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.Params(); p.Rev != Rev1 || p.P2P || !p.CRC {
		t.Errorf("fallback params %+v", p)
	}
	if r1, r2 := <-revs, <-revs; r1 != Rev2 || r2 != Rev1 {
		t.Errorf("Requests had Rev %d then %d", r1, r2)
	}

	// RequireP2P: no retry, the close is reported.
	cfg := DefaultConfig()
	cfg.RequireP2P = true
	_, err = ConnectRev1Fallback(ctx, dial, cfg)
	if !errors.Is(err, ErrClosedBeforeFrame) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("RequireP2P: %v", err)
	}
	if r := <-revs; r != Rev2 {
		t.Errorf("Rev %d", r)
	}
	select {
	case r := <-revs:
		t.Errorf("retried with Rev %d", r)
	default:
	}

	// A dial error is returned as is.
	dialErr := errors.New("no route")
	if _, err := ConnectRev1Fallback(ctx, func(context.Context) (net.Conn, error) { return nil, dialErr }, nil); err != dialErr {
		t.Errorf("dial error: %v", err)
	}
}
