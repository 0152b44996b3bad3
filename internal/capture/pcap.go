package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"time"
)

// Magic numbers of classic pcap files, as read big-endian from the first four
// bytes.
const (
	pcapMagicMicro        = 0xA1B2C3D4
	pcapMagicNano         = 0xA1B23C4D
	pcapMagicMicroSwapped = 0xD4C3B2A1
	pcapMagicNanoSwapped  = 0x4D3CB2A1
	pcapngMagic           = 0x0A0D0D0A
)

// PcapReader reads a classic pcap file in either byte order with microsecond
// or nanosecond timestamps.
type PcapReader struct {
	r        *bufio.Reader
	order    binary.ByteOrder
	nano     bool
	linkType LinkType
	snapLen  uint32
	frame    int
	hdr      [16]byte
	buf      []byte
}

// NewPcapReader reads the 24-byte file header from r.
func NewPcapReader(r io.Reader) (*PcapReader, error) {
	br := bufio.NewReader(r)
	var h [24]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return nil, ErrBadHeader
	}
	p := &PcapReader{r: br}
	switch binary.BigEndian.Uint32(h[:4]) {
	case pcapMagicMicro:
		p.order = binary.BigEndian
	case pcapMagicNano:
		p.order, p.nano = binary.BigEndian, true
	case pcapMagicMicroSwapped:
		p.order = binary.LittleEndian
	case pcapMagicNanoSwapped:
		p.order, p.nano = binary.LittleEndian, true
	default:
		return nil, ErrNotCapture
	}
	p.snapLen = p.order.Uint32(h[16:])
	// The upper bits of the link-type word carry FCS information (pcap
	// format §"LinkType and additional information"); the type is the low 16.
	p.linkType = LinkType(p.order.Uint32(h[20:]) & 0xFFFF)
	return p, nil
}

// LinkType returns the link type of every packet in the file.
func (p *PcapReader) LinkType() LinkType { return p.linkType }

// Next returns the next packet, or io.EOF at the end of the file. A file that
// ends inside a record gives ErrTruncated.
func (p *PcapReader) Next() (Packet, error) {
	n, err := io.ReadFull(p.r, p.hdr[:])
	if err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return Packet{}, io.EOF
		}
		return Packet{}, ErrTruncated
	}
	sec := p.order.Uint32(p.hdr[0:])
	frac := p.order.Uint32(p.hdr[4:])
	incl := p.order.Uint32(p.hdr[8:])
	orig := p.order.Uint32(p.hdr[12:])
	if incl > MaxPacketLen {
		return Packet{}, ErrPacketTooBig
	}
	if cap(p.buf) < int(incl) {
		p.buf = make([]byte, incl)
	}
	p.buf = p.buf[:incl]
	if _, err := io.ReadFull(p.r, p.buf); err != nil {
		return Packet{}, ErrTruncated
	}
	p.frame++
	ns := int64(frac)
	if !p.nano {
		ns *= 1000
	}
	return Packet{
		Frame:    p.frame,
		Time:     time.Unix(int64(sec), ns).UTC(),
		LinkType: p.linkType,
		OrigLen:  int(orig),
		Data:     p.buf,
	}, nil
}

// NewReader detects the file format from its magic number and returns a pcap
// or pcapng reader.
func NewReader(r io.Reader) (PacketReader, error) {
	br := bufio.NewReader(r)
	m, err := br.Peek(4)
	if err != nil {
		return nil, ErrNotCapture
	}
	switch binary.BigEndian.Uint32(m) {
	case pcapngMagic:
		return NewPcapngReader(br)
	case pcapMagicMicro, pcapMagicNano, pcapMagicMicroSwapped, pcapMagicNanoSwapped:
		return NewPcapReader(br)
	}
	return nil, ErrNotCapture
}

// IsCapture reports whether b starts with a pcap or pcapng magic number.
func IsCapture(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	switch binary.BigEndian.Uint32(b) {
	case pcapngMagic, pcapMagicMicro, pcapMagicNano, pcapMagicMicroSwapped, pcapMagicNanoSwapped:
		return true
	}
	return false
}
