package capture

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"time"
)

// TCP header flags (RFC 9293 §3.1).
const (
	TCPFin = 0x01
	TCPSyn = 0x02
	TCPRst = 0x04
	TCPPsh = 0x08
	TCPAck = 0x10
)

// ErrBadTCP is returned for a TCP header that is truncated or whose data
// offset is impossible.
var ErrBadTCP = errors.New("capture: malformed TCP header")

// Segment is one TCP segment taken from a captured packet.
type Segment struct {
	Frame    int // capture frame number
	Time     time.Time
	Src, Dst netip.AddrPort
	Seq, Ack uint32
	Flags    uint8
	Payload  []byte // valid until the packet reader's next call
}

// ParseTCP decodes the TCP header of b, the payload of an IP packet.
func ParseTCP(src, dst netip.Addr, b []byte) (Segment, error) {
	if len(b) < 20 {
		return Segment{}, ErrBadTCP
	}
	off := int(b[12]>>4) * 4
	if off < 20 || off > len(b) {
		return Segment{}, ErrBadTCP
	}
	return Segment{
		Src:     netip.AddrPortFrom(src, binary.BigEndian.Uint16(b[0:])),
		Dst:     netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[2:])),
		Seq:     binary.BigEndian.Uint32(b[4:]),
		Ack:     binary.BigEndian.Uint32(b[8:]),
		Flags:   b[13],
		Payload: b[off:],
	}, nil
}

// PacketSegment decodes the link, IP and TCP headers of a captured packet.
// Non-TCP traffic gives ErrNotIP or ErrNotTCP; an IP fragment gives
// ErrFragment (with Src and Dst filled so the caller can say which flow).
func PacketSegment(p Packet) (Segment, error) {
	nl, err := LinkPayload(p.LinkType, p.Data)
	if err != nil {
		return Segment{}, err
	}
	ip, err := ParseIP(nl)
	if err != nil {
		if errors.Is(err, ErrFragment) {
			return Segment{Frame: p.Frame, Time: p.Time,
				Src: netip.AddrPortFrom(ip.Src, 0), Dst: netip.AddrPortFrom(ip.Dst, 0)}, err
		}
		return Segment{}, err
	}
	if ip.Protocol != protoTCP {
		return Segment{}, ErrNotTCP
	}
	s, err := ParseTCP(ip.Src, ip.Dst, ip.Payload)
	if err != nil {
		return Segment{}, err
	}
	s.Frame, s.Time = p.Frame, p.Time
	return s, nil
}
