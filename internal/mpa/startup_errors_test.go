package mpa

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// fpduBytes frames a ULPDU as our peers send it: with CRC or a zero trailer.
func fpduBytes(ulpdu []byte, crc bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(ulpdu)))
	b = append(b, ulpdu...)
	b = append(b, make([]byte, fpdu.PadLen(len(ulpdu)))...)
	var c uint32
	if crc {
		c = fpdu.CRC32c(b)
	}
	return binary.LittleEndian.AppendUint32(b, c)
}

// terminateFPDU is the FPDU of a Terminate with code and no headers.
func terminateFPDU(code byte, crc bool) []byte {
	return fpduBytes(appendTerminateULPDU(nil, rdma.MakeTermCode(rdma.LayerLLP, 0, code), 1), crc)
}

// TestInitiatorSendsTerminate: errors in an otherwise valid Reply are sent
// as a Terminate as the Initiator's first FPDU (framed as negotiated), then
// the connection is closed.
func TestInitiatorSendsTerminate(t *testing.T) {
	cases := []struct {
		name  string
		reply []byte
		code  byte
		want  error
	}{
		{"ORD above IRD", rawFrame(true, FlagEnhanced, 2, blk(true, RTRWrite, 16, 17), ""), 0x06, ErrInsufficientIRD},
		{"no RTR chosen", rawFrame(true, FlagEnhanced, 2, blk(true, 0, 16, 16), ""), 0x07, ErrNoRTRModel},
		{"unoffered RTR", rawFrame(true, FlagEnhanced, 2, blk(true, RTRSend, 16, 16), ""), 0x07, ErrNoRTRModel},
		{"unoffered extension", rawFrame(true, FlagEnhanced|0x02, 2, blk(true, RTRWrite, 16, 16), ""), 0x04, ErrUnofferedExtension},
		{"Rev above the Request's", rawFrame(true, FlagEnhanced, 2, blk(false, 0, 16, 16), ""), 0x04, ErrInvalidReply},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			icfg := DefaultConfig()
			icfg.Extensions = 0
			if c.want == ErrInvalidReply {
				icfg.Rev, icfg.P2P = 1, false
			}
			cc, sc := tcpPair(t)
			got := make(chan []byte, 1)
			go func() {
				req := make([]byte, 64)
				n, _ := sc.Read(req)
				_, _ = sc.Write(c.reply)
				got <- readAllBounded(sc) // until the Initiator's FIN
				sc.Close()
				_ = n
			}()
			_, err := Connect(testCtx(t), cc, icfg)
			if !errors.Is(err, c.want) {
				t.Fatalf("Connect = %v, want %v", err, c.want)
			}
			if want := terminateFPDU(c.code, true); string(<-got) != string(want) {
				t.Errorf("peer got the wrong Terminate, want %x", want)
			}
		})
	}
}

// TestResponderRTRErrors: in P2P mode the Responder answers a first FPDU
// that is not the agreed RTR with a Terminate, and reports a Terminate
// from the Initiator.
func TestResponderRTRErrors(t *testing.T) {
	req := rawFrame(false, FlagEnhanced, 2, blk(true, RTRWrite|RTRRead, 4, 4), "")
	sendRTR := fpduBytes(appendRTR(nil, RTRSend, 1), false)
	cases := []struct {
		name      string
		first     []byte
		want      error
		terminate []byte // what the Responder must send, nil: nothing
	}{
		{"Send instead of Write RTR", sendRTR, ErrBadRTR, terminateFPDU(0x07, false)},
		{"Write with payload", fpduBytes(append(appendRTR(nil, RTRWrite, 1), 1, 2, 3), false), ErrBadRTR, terminateFPDU(0x07, false)},
		{"RDMAP version 2 not agreed", fpduBytes(appendRTR(nil, RTRWrite, 2), false), wire.ErrInvalidRDMAPVersion,
			fpduBytes(appendTerminateULPDU(nil, rdma.TermRDMAPInvalidVersion, 1), false)},
		{"peer Terminate", terminateFPDU(0x06, false), &PeerTerminateError{}, nil},
		{"siw-layout peer Terminate", fpduBytes(append(hexBytes(t, "4147 00000000 00000002 00000001 00000000"), 0x02, 0x07, 0, 0), false), &PeerTerminateError{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc, sc := tcpPair(t)
			ctx := testCtx(t)
			done := make(chan error, 1)
			go func() {
				r, err := ReadRequest(ctx, sc, nil)
				if err == nil {
					_, err = r.Accept(ctx, &Config{AcceptRTR: RTRAll})
				}
				done <- err
			}()
			if _, err := cc.Write(req); err != nil {
				t.Fatal(err)
			}
			rep := make([]byte, HeaderLen+IRDORDLen)
			if _, err := io.ReadFull(cc, rep); err != nil {
				t.Fatal(err)
			}
			if _, err := cc.Write(c.first); err != nil {
				t.Fatal(err)
			}
			sent := make(chan []byte, 1)
			go func() {
				sent <- readAllBounded(cc) // until the Responder's FIN
				cc.Close()
			}()
			err := <-done
			var pt *PeerTerminateError
			switch want := c.want.(type) {
			case *PeerTerminateError:
				if !errors.As(err, &pt) || pt.Control != [4]byte(c.first[20:24]) {
					t.Errorf("Accept = %v, want a PeerTerminateError with control %x", err, c.first[20:24])
				}
			default:
				if !errors.Is(err, want) {
					t.Errorf("Accept = %v, want %v", err, want)
				}
			}
			if got := <-sent; string(got) != string(c.terminate) {
				t.Errorf("Responder sent %x, want %x", got, c.terminate)
			}
		})
	}
}

// TestStartupTimeouts: a stalled peer ends the startup with a
// *TimeoutError; an expired context also matches context.DeadlineExceeded,
// a cancelled one context.Canceled.
func TestStartupTimeouts(t *testing.T) {
	short := 50 * time.Millisecond
	t.Run("initiator, config timeout", func(t *testing.T) {
		cc, _ := tcpPair(t)
		cfg := DefaultConfig()
		cfg.Timeout = short
		_, err := Connect(context.Background(), cc, cfg)
		var te *TimeoutError
		if !errors.As(err, &te) || !errors.Is(err, os.ErrDeadlineExceeded) || te.Stage != stageReply || !te.Timeout() {
			t.Fatalf("Connect = %v", err)
		}
		if _, err := cc.Write([]byte{0}); err == nil {
			t.Error("connection left open")
		}
	})
	t.Run("initiator, context deadline", func(t *testing.T) {
		cc, _ := tcpPair(t)
		ctx, cancel := context.WithTimeout(context.Background(), short)
		defer cancel()
		_, err := Connect(ctx, cc, nil)
		var te *TimeoutError
		if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Connect = %v", err)
		}
	})
	t.Run("initiator, context cancelled", func(t *testing.T) {
		cc, _ := tcpPair(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(short, cancel)
		if _, err := Connect(ctx, cc, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Connect = %v", err)
		}
	})
	t.Run("responder, Request", func(t *testing.T) {
		_, sc := tcpPair(t)
		_, err := ReadRequest(context.Background(), sc, &Limits{Timeout: short})
		var te *TimeoutError
		if !errors.As(err, &te) || te.Stage != stageRequest {
			t.Fatalf("ReadRequest = %v", err)
		}
	})
	t.Run("responder, half a Request", func(t *testing.T) {
		cc, sc := tcpPair(t)
		_, _ = cc.Write([]byte(RequestKey))
		_, err := ReadRequest(context.Background(), sc, &Limits{Timeout: short})
		if !errors.As(err, new(*TimeoutError)) {
			t.Fatalf("ReadRequest = %v", err)
		}
	})
	t.Run("responder, RTR", func(t *testing.T) {
		cc, sc := tcpPair(t)
		_, _ = cc.Write(rawFrame(false, FlagEnhanced, 2, blk(true, RTRWrite, 1, 1), ""))
		r, err := ReadRequest(context.Background(), sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Accept(context.Background(), &Config{AcceptRTR: RTRAll, Timeout: short})
		var te *TimeoutError
		if !errors.As(err, &te) || te.Stage != stageRTR {
			t.Fatalf("Accept = %v", err)
		}
	})
	t.Run("initiator, Read RTR response", func(t *testing.T) {
		cc, sc := tcpPair(t)
		go func() {
			b := make([]byte, 64)
			_, _ = sc.Read(b)
			_, _ = sc.Write(rawFrame(true, FlagEnhanced, 2, blk(true, RTRRead, 1, 1), ""))
		}()
		cfg := &Config{P2P: true, OfferRTR: RTRRead, IRD: 1, ORD: 1, Timeout: short}
		_, err := Connect(context.Background(), cc, cfg)
		var te *TimeoutError
		if !errors.As(err, &te) || te.Stage != stageRTRReply {
			t.Fatalf("Connect = %v", err)
		}
	})
}

// TestPipelinedBytes: bytes sent behind a Request or Reply before the next
// FPDU is allowed close the connection with ErrPipelined.
func TestPipelinedBytes(t *testing.T) {
	if !CanPeek {
		t.Skip("pipelined bytes are detected only where the socket can be peeked at (Linux); elsewhere they surface in full operation")
	}
	t.Run("behind the Request", func(t *testing.T) {
		cc, sc := tcpPair(t)
		_, _ = cc.Write(append(rawFrame(false, 0, 1, nil, "pd"), terminateFPDU(1, false)...))
		// One write, one segment: the extra bytes arrive with the Request.
		if _, err := ReadRequest(testCtx(t), sc, nil); !errors.Is(err, ErrPipelined) {
			t.Fatalf("ReadRequest = %v", err)
		}
		if got := readAllBounded(cc); len(got) != 0 {
			t.Errorf("a Reply was sent: %x", got)
		}
	})
	t.Run("behind the Reply", func(t *testing.T) {
		cc, sc := tcpPair(t)
		go func() {
			b := make([]byte, 64)
			_, _ = sc.Read(b)
			_, _ = sc.Write(append(rawFrame(true, 0, 1, nil, ""), 0, 0x0e))
		}()
		if _, err := Connect(testCtx(t), cc, &Config{Rev: 1}); !errors.Is(err, ErrPipelined) {
			t.Fatalf("Connect = %v", err)
		}
	})
}

// TestBadFrames: garbage frames give their typed errors and a close without
// a Reply (Responder) or without anything sent (Initiator).
func TestBadFrames(t *testing.T) {
	badKey := rawFrame(false, 0, 1, nil, "")
	copy(badKey, "MPA ID BAD Frame")
	long := rawFrame(false, 0, 1, nil, "")
	binary.BigEndian.PutUint16(long[18:], 513)
	cases := []struct {
		name  string
		frame []byte
		lim   *Limits
		want  error
	}{
		{"bad key", badKey, nil, ErrBadKey},
		{"Reply key", rawFrame(true, 0, 1, nil, ""), nil, ErrBadKey},
		{"Rev 0", rawFrame(false, 0, 0, nil, ""), nil, ErrUnknownRev},
		{"Rev 3", rawFrame(false, 0, 3, nil, ""), nil, ErrUnknownRev},
		{"PD_Length 513", long, nil, ErrPrivateDataTooLong},
		{"PD over the limit", rawFrame(false, 0, 1, nil, "0123456789abcdefg"), &Limits{MaxPrivateData: 16}, ErrPrivateDataTooLong},
		{"block missing", rawFrame(false, FlagEnhanced, 2, nil, "")[:HeaderLen], nil, ErrShortIRDORD},
	}
	for _, c := range cases {
		t.Run("responder/"+c.name, func(t *testing.T) {
			cc, sc := tcpPair(t)
			if c.name == "block missing" {
				c.frame[19] = 0
			}
			_, _ = cc.Write(c.frame)
			if _, err := ReadRequest(testCtx(t), sc, c.lim); !errors.Is(err, c.want) {
				t.Fatalf("ReadRequest = %v, want %v", err, c.want)
			}
			if got := readAllBounded(cc); len(got) != 0 {
				t.Errorf("Responder sent %x", got)
			}
		})
	}
	reps := []struct {
		name  string
		reply []byte
		want  error
	}{
		{"Request key", rawFrame(false, 0, 1, nil, ""), ErrBadKey},
		{"Rev 7", rawFrame(true, 0, 7, nil, ""), ErrUnknownRev},
	}
	for _, c := range reps {
		t.Run("initiator/"+c.name, func(t *testing.T) {
			cc, sc := tcpPair(t)
			got := make(chan int, 1)
			go func() {
				b := make([]byte, 64)
				n, _ := sc.Read(b)
				_, _ = sc.Write(c.reply)
				got <- n + len(readAllBounded(sc))
			}()
			if _, err := Connect(testCtx(t), cc, &Config{Rev: 1}); !errors.Is(err, c.want) {
				t.Fatalf("Connect = %v, want %v", err, c.want)
			}
			if n := <-got; n != HeaderLen {
				t.Errorf("Initiator sent %d bytes, want only its %d-byte Request", n, HeaderLen)
			}
		})
	}
	// A peer that closes instead of answering (irdma, cxgb4 on an unknown
	// Rev) is an unexpected EOF.
	cc, sc := tcpPair(t)
	go func() {
		b := make([]byte, 64)
		_, _ = sc.Read(b)
		sc.Close()
	}()
	if _, err := Connect(testCtx(t), cc, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Connect to a closing peer = %v", err)
	}
}

// TestConfigErrorsLeaveConnOpen: an invalid configuration fails before
// anything is sent.
func TestConfigErrorsLeaveConnOpen(t *testing.T) {
	cc, sc := tcpPair(t)
	if _, err := Connect(testCtx(t), cc, &Config{Rev: 9}); err == nil {
		t.Fatal("Rev 9 accepted")
	}
	_ = sc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, _ := sc.Read(make([]byte, 1)); n != 0 {
		t.Error("something was sent")
	}
	var _ net.Conn = cc
}
