package capture

import (
	"errors"
	"time"
)

// LinkType is a pcap/pcapng link-layer header type (the LINKTYPE_ values of
// https://www.tcpdump.org/linktypes.html).
type LinkType uint16

// The link types this package decodes.
const (
	LinkNull     LinkType = 0   // BSD loopback: 4-byte address family, host byte order
	LinkEthernet LinkType = 1   // Ethernet II, with 802.1Q/802.1ad tags
	LinkRaw      LinkType = 101 // raw IPv4 or IPv6
	LinkLoop     LinkType = 108 // OpenBSD loopback: 4-byte address family, network order
	LinkSLL      LinkType = 113 // Linux cooked capture v1
	LinkIPv4     LinkType = 228 // raw IPv4
	LinkIPv6     LinkType = 229 // raw IPv6
	LinkSLL2     LinkType = 276 // Linux cooked capture v2
)

// Packet is one captured packet. Data is only valid until the next call to
// the reader's Next.
type Packet struct {
	Frame     int       // 1-based position in the file, as Wireshark numbers frames
	Time      time.Time // capture timestamp
	LinkType  LinkType  // link layer of Data
	Interface int       // pcapng interface index (0 for pcap)
	OrigLen   int       // length on the wire; may exceed len(Data) (snap length)
	Data      []byte    // captured bytes
}

// PacketReader is implemented by the pcap and pcapng readers.
type PacketReader interface {
	// Next returns the next packet, or io.EOF after the last one.
	Next() (Packet, error)
}

// MaxPacketLen bounds the captured length of one packet (and the size of one
// pcapng block) that the readers accept, so a corrupt length cannot make
// them allocate without bound.
const MaxPacketLen = 1 << 20

// Errors of the file readers.
var (
	ErrNotCapture   = errors.New("capture: not a pcap or pcapng file")
	ErrBadHeader    = errors.New("capture: malformed file header")
	ErrBadRecord    = errors.New("capture: malformed packet record or block")
	ErrPacketTooBig = errors.New("capture: packet or block length over the limit")
	ErrTruncated    = errors.New("capture: file truncated inside a record")
	ErrNoInterface  = errors.New("capture: pcapng packet names an undeclared interface")
)
