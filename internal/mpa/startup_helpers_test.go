package mpa

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/testnet"
)

// tcpPair returns the two ends of a fresh loopback TCP connection.
func tcpPair(t testing.TB) (client, server net.Conn) {
	a, b := testnet.TCPPair(t)
	return a, b
}

// testCtx bounds a test's startup generously; tests never assert timing.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// result is one side's startup outcome.
type result struct {
	c   *Conn
	req *Request
	err error
}

// startPair runs Connect and ReadRequest+Accept against each other over
// loopback TCP and returns both outcomes.
func startPair(t testing.TB, icfg, rcfg *Config) (ini, resp result) {
	t.Helper()
	cc, sc := tcpPair(t)
	ctx := testCtx(t)
	done := make(chan result, 1)
	go func() {
		req, err := ReadRequest(ctx, sc, nil)
		if err != nil {
			done <- result{err: err}
			return
		}
		c, err := req.Accept(ctx, rcfg)
		done <- result{c: c, req: req, err: err}
	}()
	c, err := Connect(ctx, cc, icfg)
	ini = result{c: c, err: err}
	resp = <-done
	return ini, resp
}

// ulpdus returns test ULPDUs of lengths 14, 15, mulpdu-1 and mulpdu:
// a DDP tagged header followed by random bytes.
func ulpdus(mulpdu int) [][]byte {
	var out [][]byte
	for _, n := range []int{fpdu.MinULPDU, fpdu.MinULPDU + 1, mulpdu - 1, mulpdu} {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		b[0], b[1] = 0xC1, 0x40 // tagged, last, DDP v1; RDMA Write
		out = append(out, b)
	}
	return out
}

// sendAll sends each ULPDU as one FPDU.
func sendAll(c *Conn, msgs [][]byte) error {
	for _, m := range msgs {
		if err := c.FPDU().Writer().WriteFPDU(m[:fpdu.MinULPDU], m[fpdu.MinULPDU:]); err != nil {
			return err
		}
	}
	return nil
}

// recvAll receives len(want) FPDUs and compares their ULPDUs with want.
func recvAll(c *Conn, want [][]byte) error {
	r := c.FPDU().Reader()
	for i, w := range want {
		n, err := r.Next()
		if err != nil {
			return fmt.Errorf("FPDU %d: %w", i, err)
		}
		got := make([]byte, n)
		if err := r.Read(got); err != nil {
			return fmt.Errorf("FPDU %d: %w", i, err)
		}
		if err := r.End(); err != nil {
			return fmt.Errorf("FPDU %d: %w", i, err)
		}
		if !bytes.Equal(got, w) {
			return fmt.Errorf("FPDU %d: %d bytes differ from the %d sent", i, n, len(w))
		}
	}
	return nil
}

// exchange sends FPDUs of every test size in both directions: Initiator
// first, or, in peer-to-peer mode, Responder first (it may talk first).
func exchange(ic, rc *Conn) error {
	iMsgs, rMsgs := ulpdus(ic.MULPDU()), ulpdus(rc.MULPDU())
	errc := make(chan error, 1)
	p2p := ic.Params().P2P
	go func() {
		if p2p {
			if err := sendAll(rc, rMsgs); err != nil {
				errc <- fmt.Errorf("responder send: %w", err)
				return
			}
			errc <- recvAll(rc, iMsgs)
			return
		}
		if err := recvAll(rc, iMsgs); err != nil {
			errc <- fmt.Errorf("responder receive: %w", err)
			return
		}
		errc <- sendAll(rc, rMsgs)
	}()
	var err error
	if p2p {
		if err = recvAll(ic, rMsgs); err == nil {
			err = sendAll(ic, iMsgs)
		}
	} else if err = sendAll(ic, iMsgs); err == nil {
		err = recvAll(ic, rMsgs)
	}
	if rerr := <-errc; rerr != nil {
		return rerr
	}
	return err
}

// rawFrame builds the bytes of a frame for raw peers.
func rawFrame(reply bool, flags Flags, rev uint8, b *IRDORD, ulp string) []byte {
	var v IRDORD
	if b != nil {
		v = *b
	}
	return appendFrameBlock(nil, Frame{Reply: reply, Flags: flags, Rev: rev}, &v, []byte(ulp))
}

// readAllBounded reads until EOF or an error, bounded by a deadline.
func readAllBounded(c net.Conn) []byte {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(c)
	return b
}
