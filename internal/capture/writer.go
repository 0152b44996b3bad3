package capture

import (
	"encoding/binary"
	"errors"
	"io"
	"time"

	"github.com/goiwarp/iwarp/internal/pcapwrite"
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

// TCPFrame describes one synthesized Ethernet/IP/TCP packet; it is the
// library's capture frame, so the two writers share one synthesis.
type TCPFrame = pcapwrite.Frame

// AppendTCPFrame appends an Ethernet II frame carrying f as IPv4 or IPv6 and
// TCP, with correct IP and TCP checksums, to dst (pcapwrite.AppendFrame).
func AppendTCPFrame(dst []byte, f *TCPFrame) []byte { return pcapwrite.AppendFrame(dst, f) }
