package capture

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// IP protocol numbers and IPv6 extension headers (RFC 8200 §4).
const (
	protoHopByHop = 0
	protoTCP      = 6
	protoRouting  = 43
	protoFragment = 44
	protoESP      = 50
	protoAH       = 51
	protoNoNext   = 59
	protoDestOpts = 60
	protoMobility = 135
	protoHIP      = 139
	protoShim6    = 140
	maxExtHeaders = 16
)

// Errors of network-layer decoding.
var (
	ErrShortIP  = errors.New("capture: truncated IP header")
	ErrBadIP    = errors.New("capture: malformed IP header")
	ErrFragment = errors.New("capture: IP fragment (fragments are not reassembled)")
	ErrNotTCP   = errors.New("capture: not a TCP packet")
)

// IPPacket is the part of an IPv4 or IPv6 header this package uses.
type IPPacket struct {
	Src, Dst netip.Addr
	Protocol uint8  // upper-layer protocol (after IPv6 extension headers)
	Payload  []byte // upper-layer bytes, clipped to the IP length (drops link padding)
}

// ParseIP decodes an IPv4 (with options) or IPv6 (with extension headers)
// packet. A fragment gives ErrFragment together with the addresses, so that
// callers can report it.
func ParseIP(b []byte) (IPPacket, error) {
	if len(b) < 1 {
		return IPPacket{}, ErrShortIP
	}
	switch b[0] >> 4 {
	case 4:
		return parseIPv4(b)
	case 6:
		return parseIPv6(b)
	}
	return IPPacket{}, ErrNotIP
}

func parseIPv4(b []byte) (IPPacket, error) {
	if len(b) < 20 {
		return IPPacket{}, ErrShortIP
	}
	ihl := int(b[0]&0x0F) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	if ihl < 20 || total < ihl {
		return IPPacket{}, ErrBadIP
	}
	if len(b) < ihl {
		return IPPacket{}, ErrShortIP
	}
	p := IPPacket{
		Src:      netip.AddrFrom4([4]byte(b[12:16])),
		Dst:      netip.AddrFrom4([4]byte(b[16:20])),
		Protocol: b[9],
	}
	end := min(total, len(b))
	p.Payload = b[ihl:end]
	frag := binary.BigEndian.Uint16(b[6:])
	if frag&0x2000 != 0 || frag&0x1FFF != 0 { // MF or a non-zero offset
		return p, ErrFragment
	}
	return p, nil
}

func parseIPv6(b []byte) (IPPacket, error) {
	if len(b) < 40 {
		return IPPacket{}, ErrShortIP
	}
	p := IPPacket{
		Src: netip.AddrFrom16([16]byte(b[8:24])),
		Dst: netip.AddrFrom16([16]byte(b[24:40])),
	}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	rest := b[40:]
	if plen != 0 && plen < len(rest) { // 0: jumbogram, take what was captured
		rest = rest[:plen]
	}
	next := b[6]
	for range maxExtHeaders {
		switch next {
		case protoHopByHop, protoRouting, protoDestOpts, protoMobility, protoHIP, protoShim6:
			if len(rest) < 8 {
				return p, ErrShortIP
			}
			l := (int(rest[1]) + 1) * 8
			if len(rest) < l {
				return p, ErrShortIP
			}
			next, rest = rest[0], rest[l:]
		case protoAH:
			if len(rest) < 8 {
				return p, ErrShortIP
			}
			l := (int(rest[1]) + 2) * 4
			if len(rest) < l {
				return p, ErrShortIP
			}
			next, rest = rest[0], rest[l:]
		case protoFragment:
			if len(rest) < 8 {
				return p, ErrShortIP
			}
			off := binary.BigEndian.Uint16(rest[2:])
			if off&0xFFF9 != 0 { // offset (high 13 bits) or M (bit 0)
				p.Protocol = rest[0]
				p.Payload = rest[8:]
				return p, ErrFragment
			}
			next, rest = rest[0], rest[8:] // atomic fragment: whole packet
		default:
			p.Protocol = next
			p.Payload = rest
			return p, nil
		}
	}
	return p, ErrBadIP
}
