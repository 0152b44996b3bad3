package capture

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/goiwarp/iwarp/internal/pcapwrite"
)

// TestFlowRoundTrip synthesizes a conversation (IPv4 and IPv6, with
// retransmissions) and reassembles it back.
func TestFlowRoundTrip(t *testing.T) {
	for _, ends := range [][2]netip.AddrPort{{cliV4, srvV4}, {cliV6, srvV6}} {
		var buf bytes.Buffer
		w, err := NewPcapWriter(&buf, LinkEthernet)
		if err != nil {
			t.Fatal(err)
		}
		f := &Flow{W: w, Client: ends[0], Server: ends[1], MSS: 7, Time: t0}
		req := []byte("request bytes, several segments")
		rep := bytes.Repeat([]byte("R"), 40)
		steps := []func() error{
			f.Open,
			func() error { return f.Send(0, req) },
			func() error { return f.Resend(0, 3, 10) }, // overlapping retransmission
			func() error { return f.Send(1, rep) },
			func() error { return f.Resend(1, 0, 40) },
			f.Close,
		}
		for _, s := range steps {
			if err := s(); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Resend(0, 0, 1000); err == nil {
			t.Error("Resend beyond the data succeeded")
		}
		r, err := NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		a, err := ReadAll(r, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Conns()) != 1 || len(a.Notes) != 0 {
			t.Fatalf("%v: %d conns, notes %v", ends, len(a.Conns()), a.Notes)
		}
		c := a.Conns()[0]
		if c.A != ends[0] || !c.SawSYN {
			t.Errorf("%v: initiator %v", ends, c.A)
		}
		got := c.Dir[0].Runs()
		if len(got) != 1 || !bytes.Equal(got[0].Data, req) || c.Dir[0].Retransmitted != 1 {
			t.Errorf("%v: client stream %v retrans %d", ends, got, c.Dir[0].Retransmitted)
		}
		got = c.Dir[1].Runs()
		if len(got) != 1 || !bytes.Equal(got[0].Data, rep) || c.Dir[1].Retransmitted != 1 {
			t.Errorf("%v: server stream %v retrans %d", ends, got, c.Dir[1].Retransmitted)
		}
	}
}

// TestChecksums verifies the synthesized IPv4 header and TCP checksums sum
// to zero (RFC 1071).
func TestChecksums(t *testing.T) {
	for _, ends := range [][2]netip.AddrPort{{cliV4, srvV4}, {cliV6, srvV6}} {
		fr := AppendTCPFrame(nil, &TCPFrame{Src: ends[0], Dst: ends[1], Seq: 1, Flags: TCPAck, Payload: []byte("odd")})
		ip := fr[14:]
		var sum uint32
		var tcp []byte
		if ends[0].Addr().Is4() {
			if pcapwrite.Fold(pcapwrite.OnesSum(0, ip[:20])) != 0xFFFF {
				t.Errorf("IPv4 header checksum")
			}
			sum = pcapwrite.OnesSum(0, ip[12:20])
			tcp = ip[20:]
		} else {
			sum = pcapwrite.OnesSum(0, ip[8:40])
			tcp = ip[40:]
		}
		sum += protoTCP + uint32(len(tcp))
		if pcapwrite.Fold(pcapwrite.OnesSum(sum, tcp)) != 0xFFFF {
			t.Errorf("%v: TCP checksum", ends)
		}
	}
}
