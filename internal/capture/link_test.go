package capture

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestLinkTypes wraps the same IPv4/TCP packet in every supported link layer.
func TestLinkTypes(t *testing.T) {
	eth := ethTCP(cliV4, srvV4, 100, TCPAck|TCPPsh, "payload")
	ip := ipOf(eth)
	vlan := append(append(append([]byte(nil), eth[:12]...), 0x81, 0x00, 0x00, 0x05, 0x88, 0xa8, 0x00, 0x06), eth[12:]...)
	vlan[16], vlan[17] = 0x81, 0x00 // 802.1ad outer, 802.1Q inner: fix order
	vlan[12], vlan[13] = 0x88, 0xa8
	sll := append([]byte{0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00}, ip...)
	sll2 := append([]byte{0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0}, ip...)
	nullLE := append([]byte{2, 0, 0, 0}, ip...)
	nullBE := append([]byte{0, 0, 0, 2}, ip...)
	loop := append([]byte{0, 0, 0, 2}, ip...)
	cases := []struct {
		name string
		lt   LinkType
		data []byte
	}{
		{"ethernet", LinkEthernet, eth},
		{"ethernet+vlan", LinkEthernet, vlan},
		{"ethernet+padding", LinkEthernet, append(append([]byte(nil), eth...), 0, 0, 0, 0)},
		{"sll", LinkSLL, sll},
		{"sll2", LinkSLL2, sll2},
		{"null little-endian", LinkNull, nullLE},
		{"null big-endian", LinkNull, nullBE},
		{"loop", LinkLoop, loop},
		{"raw", LinkRaw, ip},
		{"ipv4", LinkIPv4, ip},
	}
	for _, c := range cases {
		seg, err := PacketSegment(Packet{Frame: 3, LinkType: c.lt, Data: c.data})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if seg.Src != cliV4 || seg.Dst != srvV4 || seg.Seq != 100 || seg.Flags != TCPAck|TCPPsh || string(seg.Payload) != "payload" || seg.Frame != 3 {
			t.Errorf("%s: got %+v", c.name, seg)
		}
	}
	if _, err := LinkPayload(LinkType(9999), eth); !errors.Is(err, ErrUnknownLink) {
		t.Errorf("unknown link: %v", err)
	}
	arp := append(append([]byte(nil), eth[:12]...), 0x08, 0x06)
	if _, err := PacketSegment(Packet{LinkType: LinkEthernet, Data: arp}); !errors.Is(err, ErrNotIP) {
		t.Errorf("ARP: %v", err)
	}
}

func TestIPv4OptionsAndFragments(t *testing.T) {
	ip := ipOf(ethTCP(cliV4, srvV4, 5, TCPAck, "abc"))
	// Insert 4 bytes of options (NOP NOP NOP EOL): IHL 6.
	opt := append(append(append([]byte(nil), ip[:20]...), 1, 1, 1, 0), ip[20:]...)
	opt[0] = 0x46
	binary.BigEndian.PutUint16(opt[2:], uint16(len(opt)))
	seg, err := PacketSegment(Packet{LinkType: LinkRaw, Data: opt})
	if err != nil || string(seg.Payload) != "abc" {
		t.Fatalf("options: %v %q", err, seg.Payload)
	}
	for _, frag := range []uint16{0x2000, 0x0010} { // MF; offset 128
		f := append([]byte(nil), ip...)
		binary.BigEndian.PutUint16(f[6:], frag)
		seg, err := PacketSegment(Packet{LinkType: LinkRaw, Data: f})
		if !errors.Is(err, ErrFragment) || seg.Src.Addr() != cliV4.Addr() {
			t.Errorf("fragment %#x: %v %v", frag, err, seg.Src)
		}
	}
	bad := append([]byte(nil), ip...)
	bad[0] = 0x44
	if _, err := ParseIP(bad); !errors.Is(err, ErrBadIP) {
		t.Errorf("IHL 4: %v", err)
	}
}

func TestIPv6ExtensionHeaders(t *testing.T) {
	ip := ipOf(ethTCP(cliV6, srvV6, 5, TCPAck, "v6data"))
	tcp := ip[40:]
	// Hop-by-hop (8 bytes) -> destination options (16 bytes) -> AH (12+4)
	// -> atomic fragment header -> TCP.
	var ext []byte
	ext = append(ext, protoDestOpts, 0, 1, 4, 0, 0, 0, 0)
	ext = append(ext, protoAH, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	ext = append(ext, protoFragment, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0)
	ext = append(ext, protoTCP, 0, 0, 0, 0, 0, 0, 9)
	pkt := append(append(append([]byte(nil), ip[:40]...), ext...), tcp...)
	pkt[6] = protoHopByHop
	binary.BigEndian.PutUint16(pkt[4:], uint16(len(ext)+len(tcp)))
	seg, err := PacketSegment(Packet{LinkType: LinkIPv6, Data: pkt})
	if err != nil || string(seg.Payload) != "v6data" || seg.Src != cliV6 {
		t.Fatalf("extension headers: %v %+v", err, seg)
	}
	// A real fragment (M set).
	frag := append([]byte(nil), pkt...)
	frag[40+8+16+16+3] = 1
	if _, err := PacketSegment(Packet{LinkType: LinkIPv6, Data: frag}); !errors.Is(err, ErrFragment) {
		t.Errorf("IPv6 fragment: %v", err)
	}
}

// TestPacketParsersTruncated checks every prefix of valid packets fails or
// succeeds cleanly, never panics.
func TestPacketParsersTruncated(t *testing.T) {
	frames := [][]byte{ethTCP(cliV4, srvV4, 1, TCPAck, "x"), ethTCP(cliV6, srvV6, 1, TCPAck, "y")}
	for _, f := range frames {
		for n := range len(f) {
			seg, err := PacketSegment(Packet{LinkType: LinkEthernet, Data: f[:n]})
			if err == nil && len(seg.Payload) != 0 {
				t.Errorf("prefix %d of %d parsed with payload %q", n, len(f), seg.Payload)
			}
		}
	}
}
