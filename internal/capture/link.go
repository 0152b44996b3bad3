package capture

import (
	"encoding/binary"
	"errors"
)

// EtherTypes this package follows.
const (
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86DD
	etherTypeVLAN  = 0x8100 // 802.1Q
	etherTypeQinQ  = 0x88A8 // 802.1ad
	etherTypeQinQ9 = 0x9100 // pre-standard double tagging
	maxVLANTags    = 8
)

// Errors of link-layer decoding. Packets that give them are skipped, not
// fatal: a capture holds all kinds of traffic.
var (
	ErrShortLink   = errors.New("capture: packet shorter than its link-layer header")
	ErrUnknownLink = errors.New("capture: unsupported link type")
	ErrNotIP       = errors.New("capture: not an IPv4 or IPv6 packet")
)

// LinkPayload strips the link-layer header of data and returns the network
// layer packet (IPv4 or IPv6) it carries.
func LinkPayload(lt LinkType, data []byte) ([]byte, error) {
	switch lt {
	case LinkEthernet:
		if len(data) < 14 {
			return nil, ErrShortLink
		}
		et := binary.BigEndian.Uint16(data[12:])
		b := data[14:]
		for i := 0; et == etherTypeVLAN || et == etherTypeQinQ || et == etherTypeQinQ9; i++ {
			if i == maxVLANTags || len(b) < 4 {
				return nil, ErrShortLink
			}
			et = binary.BigEndian.Uint16(b[2:])
			b = b[4:]
		}
		return ipByEtherType(et, b)
	case LinkSLL:
		if len(data) < 16 {
			return nil, ErrShortLink
		}
		return ipByEtherType(binary.BigEndian.Uint16(data[14:]), data[16:])
	case LinkSLL2:
		if len(data) < 20 {
			return nil, ErrShortLink
		}
		return ipByEtherType(binary.BigEndian.Uint16(data[0:]), data[20:])
	case LinkNull, LinkLoop:
		if len(data) < 4 {
			return nil, ErrShortLink
		}
		// The family is in host order for NULL, network order for LOOP;
		// accept either by looking at which half is non-zero.
		af := binary.BigEndian.Uint32(data)
		if lt == LinkNull && af&0xFFFF == 0 {
			af = binary.LittleEndian.Uint32(data)
		}
		switch af {
		case 2: // AF_INET
			return data[4:], nil
		case 10, 24, 28, 30: // AF_INET6: Linux, NetBSD/OpenBSD, FreeBSD, Darwin
			return data[4:], nil
		}
		return nil, ErrNotIP
	case LinkRaw, LinkIPv4, LinkIPv6, 12, 14:
		// 12 and 14 are DLT_RAW of some BSDs, written as-is by old libpcap.
		return data, nil
	}
	return nil, ErrUnknownLink
}

func ipByEtherType(et uint16, b []byte) ([]byte, error) {
	if et == etherTypeIPv4 || et == etherTypeIPv6 {
		return b, nil
	}
	return nil, ErrNotIP
}
