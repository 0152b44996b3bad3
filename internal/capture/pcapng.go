package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"time"
)

// pcapng block types (draft-ietf-opsawg-pcapng §4).
const (
	blockSHB       = 0x0A0D0D0A // Section Header Block
	blockIDB       = 0x00000001 // Interface Description Block
	blockPB        = 0x00000002 // Packet Block (obsolete)
	blockSPB       = 0x00000003 // Simple Packet Block
	blockEPB       = 0x00000006 // Enhanced Packet Block
	byteOrderMagic = 0x1A2B3C4D
	optEndOfOpt    = 0
	optIfTsresol   = 9
	maxInterfaces  = 1 << 16
)

type pcapngIface struct {
	linkType LinkType
	snapLen  uint32
	// ticks per second of the timestamps, from if_tsresol (default 10^6)
	tickNum  uint64
	tickBase bool // true: ticks are 2^-tickNum seconds, else 10^-tickNum
}

// PcapngReader reads a pcapng file: any number of sections in either byte
// order, with Interface Description, Enhanced Packet, Simple Packet and
// (obsolete) Packet blocks. Other blocks are skipped.
type PcapngReader struct {
	r      *bufio.Reader
	order  binary.ByteOrder
	ifaces []pcapngIface
	frame  int
	head   [12]byte // block head, kept here so reading it does not allocate
	buf    []byte
}

// NewPcapngReader reads the first Section Header Block from r.
func NewPcapngReader(r io.Reader) (*PcapngReader, error) {
	p := &PcapngReader{r: bufio.NewReader(r)}
	typ, _, err := p.readBlock()
	if err != nil || typ != blockSHB {
		if err == nil || errors.Is(err, io.EOF) {
			err = ErrBadHeader
		}
		return nil, err
	}
	return p, nil
}

// readBlock reads one whole block and returns its type and body (without the
// 8-byte head and the trailing length). A Section Header Block switches the
// byte order and resets the interface list.
func (p *PcapngReader) readBlock() (uint32, []byte, error) {
	head := p.head[:]
	n, err := io.ReadFull(p.r, head[:8])
	if err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return 0, nil, io.EOF
		}
		return 0, nil, ErrTruncated
	}
	typ := binary.BigEndian.Uint32(head[:4]) // palindromic for SHB
	if typ == blockSHB {
		if _, err := io.ReadFull(p.r, head[8:12]); err != nil {
			return 0, nil, ErrTruncated
		}
		switch binary.BigEndian.Uint32(head[8:]) {
		case byteOrderMagic:
			p.order = binary.BigEndian
		case 0x4D3C2B1A:
			p.order = binary.LittleEndian
		default:
			return 0, nil, ErrBadHeader
		}
		p.ifaces = p.ifaces[:0]
	} else if p.order == nil {
		return 0, nil, ErrBadHeader
	} else {
		typ = p.order.Uint32(head[:4])
	}
	total := p.order.Uint32(head[4:8])
	if total < 12 || total%4 != 0 || (typ == blockSHB && total < 28) {
		return 0, nil, ErrBadRecord
	}
	if total > MaxPacketLen+1024 {
		return 0, nil, ErrPacketTooBig
	}
	read := 8
	if typ == blockSHB {
		read = 12
	}
	rest := int(total) - read
	if cap(p.buf) < rest {
		p.buf = make([]byte, rest)
	}
	p.buf = p.buf[:rest]
	if _, err := io.ReadFull(p.r, p.buf); err != nil {
		return 0, nil, ErrTruncated
	}
	if p.order.Uint32(p.buf[rest-4:]) != total {
		return 0, nil, ErrBadRecord
	}
	return typ, p.buf[:rest-4], nil
}

// Next returns the next packet, or io.EOF at the end of the file.
func (p *PcapngReader) Next() (Packet, error) {
	for {
		typ, body, err := p.readBlock()
		if err != nil {
			return Packet{}, err
		}
		switch typ {
		case blockIDB:
			if err := p.addInterface(body); err != nil {
				return Packet{}, err
			}
		case blockEPB:
			return p.enhanced(body)
		case blockPB:
			return p.obsolete(body)
		case blockSPB:
			return p.simple(body)
		}
	}
}

func (p *PcapngReader) addInterface(body []byte) error {
	if len(body) < 8 {
		return ErrBadRecord
	}
	if len(p.ifaces) >= maxInterfaces {
		return ErrBadRecord
	}
	ifc := pcapngIface{
		linkType: LinkType(p.order.Uint16(body[0:])),
		snapLen:  p.order.Uint32(body[4:]),
		tickNum:  6,
	}
	opts := body[8:]
	for len(opts) >= 4 {
		code := p.order.Uint16(opts[0:])
		l := int(p.order.Uint16(opts[2:]))
		if code == optEndOfOpt {
			break
		}
		padded := (l + 3) &^ 3
		if 4+padded > len(opts) {
			return ErrBadRecord
		}
		if code == optIfTsresol && l >= 1 {
			v := opts[4]
			ifc.tickBase = v&0x80 != 0
			ifc.tickNum = uint64(v & 0x7F)
		}
		opts = opts[4+padded:]
	}
	p.ifaces = append(p.ifaces, ifc)
	return nil
}

// timestamp converts a 64-bit tick count of interface ifc to a time. Units
// finer than a nanosecond are truncated; absurd resolutions saturate.
func (ifc *pcapngIface) timestamp(ticks uint64) time.Time {
	if ifc.tickBase {
		if ifc.tickNum > 63 {
			return time.Unix(0, 0).UTC()
		}
		per := uint64(1) << ifc.tickNum
		sec := ticks / per
		frac := ticks % per
		ns := frac * 1_000_000_000 >> ifc.tickNum
		if frac > (1<<63)/1_000_000_000 {
			ns = uint64(float64(frac) / float64(per) * 1e9)
		}
		return time.Unix(int64(sec&(1<<62-1)), int64(ns)).UTC()
	}
	if ifc.tickNum > 19 {
		return time.Unix(0, 0).UTC()
	}
	per := uint64(1)
	for range ifc.tickNum {
		per *= 10
	}
	sec := ticks / per
	frac := ticks % per
	var ns uint64
	if ifc.tickNum <= 9 {
		mul := uint64(1)
		for range 9 - ifc.tickNum {
			mul *= 10
		}
		ns = frac * mul
	} else {
		div := uint64(1)
		for range ifc.tickNum - 9 {
			div *= 10
		}
		ns = frac / div
	}
	return time.Unix(int64(sec&(1<<62-1)), int64(ns)).UTC()
}

func (p *PcapngReader) iface(id uint32) (*pcapngIface, error) {
	if int64(id) >= int64(len(p.ifaces)) {
		return nil, ErrNoInterface
	}
	return &p.ifaces[id], nil
}

// packet builds a Packet from a block's captured-data area.
func (p *PcapngReader) packet(id uint32, ts uint64, capLen, origLen uint32, data []byte) (Packet, error) {
	ifc, err := p.iface(id)
	if err != nil {
		return Packet{}, err
	}
	if uint64(capLen) > uint64(len(data)) {
		return Packet{}, ErrBadRecord
	}
	p.frame++
	return Packet{
		Frame:     p.frame,
		Time:      ifc.timestamp(ts),
		LinkType:  ifc.linkType,
		Interface: int(id),
		OrigLen:   int(origLen),
		Data:      data[:capLen],
	}, nil
}

func (p *PcapngReader) enhanced(body []byte) (Packet, error) {
	if len(body) < 20 {
		return Packet{}, ErrBadRecord
	}
	ts := uint64(p.order.Uint32(body[4:]))<<32 | uint64(p.order.Uint32(body[8:]))
	return p.packet(p.order.Uint32(body[0:]), ts, p.order.Uint32(body[12:]), p.order.Uint32(body[16:]), body[20:])
}

func (p *PcapngReader) obsolete(body []byte) (Packet, error) {
	if len(body) < 20 {
		return Packet{}, ErrBadRecord
	}
	ts := uint64(p.order.Uint32(body[4:]))<<32 | uint64(p.order.Uint32(body[8:]))
	return p.packet(uint32(p.order.Uint16(body[0:])), ts, p.order.Uint32(body[12:]), p.order.Uint32(body[16:]), body[20:])
}

// simple decodes a Simple Packet Block: interface 0, no timestamp, captured
// length the smaller of the original length, the snap length and the block.
func (p *PcapngReader) simple(body []byte) (Packet, error) {
	if len(body) < 4 {
		return Packet{}, ErrBadRecord
	}
	ifc, err := p.iface(0)
	if err != nil {
		return Packet{}, err
	}
	orig := p.order.Uint32(body[0:])
	capLen := uint64(orig)
	if ifc.snapLen != 0 && uint64(ifc.snapLen) < capLen {
		capLen = uint64(ifc.snapLen)
	}
	if capLen > uint64(len(body)-4) {
		capLen = uint64(len(body) - 4)
	}
	p.frame++
	return Packet{
		Frame:    p.frame,
		Time:     time.Unix(0, 0).UTC(),
		LinkType: ifc.linkType,
		OrigLen:  int(orig),
		Data:     body[4 : 4+capLen],
	}, nil
}
