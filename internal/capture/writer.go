package capture

import (
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"time"
)

// PcapWriter writes a classic pcap file (little-endian, microsecond
// timestamps).
type PcapWriter struct {
	w        io.Writer
	linkType LinkType
	hdr      [16]byte
}

// NewPcapWriter writes the file header for packets of the given link type.
func NewPcapWriter(w io.Writer, lt LinkType) (*PcapWriter, error) {
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], pcapMagicMicro)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], MaxPacketLen)
	binary.LittleEndian.PutUint32(h[20:], uint32(lt))
	if _, err := w.Write(h[:]); err != nil {
		return nil, err
	}
	return &PcapWriter{w: w, linkType: lt}, nil
}

// ErrWritePacketTooBig is returned by WritePacket for data over MaxPacketLen.
var ErrWritePacketTooBig = errors.New("capture: packet to write is over MaxPacketLen")

// WritePacket writes one packet record.
func (pw *PcapWriter) WritePacket(t time.Time, data []byte) error {
	if len(data) > MaxPacketLen {
		return ErrWritePacketTooBig
	}
	binary.LittleEndian.PutUint32(pw.hdr[0:], uint32(t.Unix()))
	binary.LittleEndian.PutUint32(pw.hdr[4:], uint32(t.Nanosecond()/1000))
	binary.LittleEndian.PutUint32(pw.hdr[8:], uint32(len(data)))
	binary.LittleEndian.PutUint32(pw.hdr[12:], uint32(len(data)))
	if _, err := pw.w.Write(pw.hdr[:]); err != nil {
		return err
	}
	_, err := pw.w.Write(data)
	return err
}

// TCPFrame describes one synthesized Ethernet/IP/TCP packet. Src and Dst
// must both be IPv4 or both IPv6 addresses.
type TCPFrame struct {
	Src, Dst netip.AddrPort
	Seq, Ack uint32
	Flags    uint8
	Window   uint16
	IPID     uint16 // IPv4 identification
	Payload  []byte
}

// Fixed MAC addresses of synthesized frames (locally administered).
var (
	macA = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a}
	macB = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b}
)

// AppendTCPFrame appends an Ethernet II frame carrying f as IPv4 or IPv6 and
// TCP, with correct IP and TCP checksums, to dst.
func AppendTCPFrame(dst []byte, f *TCPFrame) []byte {
	v6 := f.Src.Addr().Is6()
	srcMAC, dstMAC := macA, macB
	if f.Src.Compare(f.Dst) > 0 {
		srcMAC, dstMAC = macB, macA
	}
	dst = append(dst, dstMAC[:]...)
	dst = append(dst, srcMAC[:]...)
	tcpLen := 20 + len(f.Payload)
	var ipStart int
	if v6 {
		dst = binary.BigEndian.AppendUint16(dst, etherTypeIPv6)
		ipStart = len(dst)
		dst = append(dst, 0x60, 0, 0, 0)
		dst = binary.BigEndian.AppendUint16(dst, uint16(tcpLen))
		dst = append(dst, protoTCP, 64)
		s, d := f.Src.Addr().As16(), f.Dst.Addr().As16()
		dst = append(dst, s[:]...)
		dst = append(dst, d[:]...)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, etherTypeIPv4)
		ipStart = len(dst)
		dst = append(dst, 0x45, 0)
		dst = binary.BigEndian.AppendUint16(dst, uint16(20+tcpLen))
		dst = binary.BigEndian.AppendUint16(dst, f.IPID)
		dst = append(dst, 0x40, 0, 64, protoTCP, 0, 0) // DF, TTL 64, checksum later
		s, d := f.Src.Addr().As4(), f.Dst.Addr().As4()
		dst = append(dst, s[:]...)
		dst = append(dst, d[:]...)
		binary.BigEndian.PutUint16(dst[ipStart+10:], ^fold(onesSum(0, dst[ipStart:ipStart+20])))
	}
	tcpStart := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, f.Src.Port())
	dst = binary.BigEndian.AppendUint16(dst, f.Dst.Port())
	dst = binary.BigEndian.AppendUint32(dst, f.Seq)
	dst = binary.BigEndian.AppendUint32(dst, f.Ack)
	win := f.Window
	if win == 0 {
		win = 65535
	}
	dst = append(dst, 5<<4, f.Flags)
	dst = binary.BigEndian.AppendUint16(dst, win)
	dst = append(dst, 0, 0, 0, 0) // checksum, urgent pointer
	dst = append(dst, f.Payload...)
	// Pseudo-header: addresses, protocol, TCP length.
	var sum uint32
	if v6 {
		sum = onesSum(sum, dst[ipStart+8:ipStart+40])
	} else {
		sum = onesSum(sum, dst[ipStart+12:ipStart+20])
	}
	sum += protoTCP + uint32(tcpLen)
	binary.BigEndian.PutUint16(dst[tcpStart+16:], ^fold(onesSum(sum, dst[tcpStart:])))
	return dst
}

// onesSum adds b as big-endian 16-bit words to sum (RFC 1071).
func onesSum(sum uint32, b []byte) uint32 {
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
		if sum > 0xFFFF0000 {
			sum = sum>>16 + sum&0xFFFF
		}
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

func fold(sum uint32) uint16 {
	for sum > 0xFFFF {
		sum = sum>>16 + sum&0xFFFF
	}
	return uint16(sum)
}
