package rping

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/decode"
	"github.com/goiwarp/iwarp/internal/wire"
)

// session is what one rping connection put on the wire, per direction
// (0: the client's, 1: the server's): one line per FPDU naming its
// operation and sizes, and the payloads that do not depend on addresses
// (ping data, and the server's go-aheads).
type session struct {
	ops  [2][]string
	data [2][][]byte
}

// sessionOf decodes a connection from its MPA startup on.
func sessionOf(t *testing.T, c *capture.Conn) *session {
	t.Helper()
	dc := decode.DecodeConn(c, decode.Options{})
	if !dc.Startup || dc.Initiator < 0 {
		t.Fatalf("no MPA startup decoded: %v", dc.Notes)
	}
	s := &session{}
	for i := range dc.Items {
		it := &dc.Items[i]
		if it.Kind != decode.KindFPDU {
			continue
		}
		if it.FPDUErr != nil || it.ULPDUErr != nil || it.CheckErr != nil {
			t.Fatalf("FPDU at %d: %v %v %v", it.Off, it.FPDUErr, it.ULPDUErr, it.CheckErr)
		}
		d := 0
		if it.Dir != dc.Initiator {
			d = 1
		}
		u := &it.ULPDU
		op := fmt.Sprintf("%v %d", u.Opcode, len(u.Payload))
		switch u.Opcode {
		case wire.OpReadRequest:
			op = fmt.Sprintf("%v size %d", u.Opcode, u.ReadRequest.Size)
		case wire.OpSend:
			if d == 0 {
				// An advertisement: its TO and STag are the sender's
				// addresses; its size is the ping size.
				op += fmt.Sprintf(" len %d", binary.BigEndian.Uint32(u.Payload[12:]))
			} else {
				s.data[d] = append(s.data[d], u.Payload)
			}
		case wire.OpReadResponse, wire.OpWrite:
			s.data[d] = append(s.data[d], u.Payload)
		}
		s.ops[d] = append(s.ops[d], op)
	}
	return s
}

// TestWireLikeSiw runs our client against our server with rping's default
// options and the MPA settings Linux siw uses by default (Rev 2, no CRC,
// no peer-to-peer mode), captures the connection, and compares it FPDU by
// FPDU with a session of siw's rping client and server
// (interop/captures/transcripts/siw-rping-session.log, 5 pings): the same
// operations in each direction with the same sizes (advertised size 64,
// Reads of 64, Writes of strlen+1 = 64, 16-byte messages) and the same
// ping data and go-aheads, byte for byte.
func TestWireLikeSiw(t *testing.T) {
	b, err := os.ReadFile("../../interop/captures/transcripts/siw-rping-session.log")
	if err != nil {
		t.Fatal(err)
	}
	a, err := decode.ReadText(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	siw := sessionOf(t, a.Conns()[0])

	var pcap bytes.Buffer
	capt, err := iwarp.NewCapture(&pcap, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn := iwarp.ConnOptions{DisableCRC: true, Dialer: capt.Dialer(nil), Interop: &iwarp.InteropOptions{DisableP2P: true}}
	srv := newSide(Options{Conn: iwarp.ConnOptions{DisableCRC: true, Interop: &iwarp.InteropOptions{DisableP2P: true}}})
	addr, done := listen(t, srv)
	cl := newSide(Options{Count: 5, Validate: true, Conn: conn})
	if err := Dial(context.Background(), addr, netip.Addr{}, &cl.o); err != nil {
		t.Fatalf("client: %v\n%s", err, cl.err.String())
	}
	if err := serverResult(t, done); err != nil {
		t.Fatalf("server: %v", err)
	}
	if err := capt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := capture.NewReader(&pcap)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := capture.ReadAll(r, capture.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	ours := sessionOf(t, ca.Conns()[0])

	for d, name := range []string{"client", "server"} {
		if got, want := strings.Join(ours.ops[d], "\n"), strings.Join(siw.ops[d], "\n"); got != want {
			t.Errorf("%s's FPDUs:\n%s\nsiw's:\n%s", name, got, want)
		}
		if len(ours.data[d]) != len(siw.data[d]) {
			t.Errorf("%s: %d payloads, siw %d", name, len(ours.data[d]), len(siw.data[d]))
			continue
		}
		for i := range siw.data[d] {
			if !bytes.Equal(ours.data[d][i], siw.data[d][i]) {
				t.Errorf("%s payload %d:\n%q\nsiw's:\n%q", name, i, ours.data[d][i], siw.data[d][i])
			}
		}
	}
	if len(siw.ops[0]) != 15 || len(siw.ops[1]) != 20 {
		t.Errorf("the transcript has %d and %d FPDUs, want 5 pings of 3 and 4", len(siw.ops[0]), len(siw.ops[1]))
	}
}
