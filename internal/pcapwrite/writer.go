package pcapwrite

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"sync"
	"time"
)

// File header constants of classic pcap.
const (
	magicNano    = 0xA1B23C4D // little-endian, nanosecond timestamps
	linkEthernet = 1          // LINKTYPE_ETHERNET

	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86DD
	protoTCP      = 6
)

// TCP flags of synthesized segments.
const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagPSH = 0x08
	flagACK = 0x10
)

// DefaultMSS is the segment payload size when Options.MSS is zero: the
// Ethernet MSS, so that the capture looks like one taken on a real link.
const DefaultMSS = 1460

// MaxMSS is the largest MSS: a segment's IPv4 total length must fit in 16
// bits (65535 - 20 - 20).
const MaxMSS = 65495

// snapLen is the snapshot length written in the file header: the largest
// frame the Writer can produce.
const snapLen = 14 + 40 + 20 + MaxMSS

// Options configure a Writer. The zero value gives the defaults.
type Options struct {
	// MSS is the most payload bytes per TCP segment, 1 to MaxMSS; 0 means
	// DefaultMSS.
	MSS int
	// BufferSize is the size of the output buffer; 0 means 64 KiB.
	BufferSize int
}

var (
	// ErrClosed is returned by calls on a closed Writer.
	ErrClosed = errors.New("pcapwrite: writer closed")
	// ErrMSS is returned by NewWriter for an MSS out of range.
	ErrMSS = errors.New("pcapwrite: MSS out of range")
	// ErrAddr is returned by NewFlow for invalid or mismatched addresses.
	ErrAddr = errors.New("pcapwrite: client and server must be valid addresses of one IP family")
)

// Writer writes a pcap file. Its methods are safe for concurrent use: the
// two directions of a connection, and any number of connections, may be
// recorded from different goroutines. Output is buffered until Flush or
// Close. The first write error is kept: every later call returns it.
type Writer struct {
	mu     sync.Mutex
	bw     *bufio.Writer
	mss    int
	last   time.Time // timestamp of the last packet; packets never go back
	err    error
	closed bool
	ipID   uint16
	frame  []byte
	rec    [16]byte
}

// NewWriter writes the pcap file header to w and returns a Writer for it.
// The Writer does not close w.
func NewWriter(w io.Writer, opts *Options) (*Writer, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MSS == 0 {
		o.MSS = DefaultMSS
	}
	if o.MSS < 1 || o.MSS > MaxMSS {
		return nil, ErrMSS
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 64 << 10
	}
	pw := &Writer{bw: bufio.NewWriterSize(w, o.BufferSize), mss: o.MSS}
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], magicNano)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], snapLen)
	binary.LittleEndian.PutUint32(h[20:], linkEthernet)
	if _, err := pw.bw.Write(h[:]); err != nil {
		return nil, err
	}
	return pw, nil
}

// MSS returns the most payload bytes the Writer puts in one segment.
func (pw *Writer) MSS() int { return pw.mss }

// Flush writes the buffered packets to the underlying writer.
func (pw *Writer) Flush() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.err != nil {
		return pw.err
	}
	if pw.closed {
		return ErrClosed
	}
	pw.err = pw.bw.Flush()
	return pw.err
}

// Close flushes the Writer and makes every later call fail with ErrClosed.
// It does not write FIN segments for flows still open (the capture then
// ends mid-connection, as one stopped early would) and does not close the
// underlying writer.
func (pw *Writer) Close() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.closed {
		return ErrClosed
	}
	pw.closed = true
	if pw.err != nil {
		return pw.err
	}
	pw.err = pw.bw.Flush()
	return pw.err
}

// Err returns the first error the Writer met, or nil.
func (pw *Writer) Err() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.err
}

// usable reports whether packets may be written; it holds pw.mu.
func (pw *Writer) usable() error {
	if pw.err != nil {
		return pw.err
	}
	if pw.closed {
		return ErrClosed
	}
	return nil
}

// packet writes one segment; it holds pw.mu and has checked usable.
func (pw *Writer) packet(t time.Time, seg *Frame) {
	if t.Before(pw.last) {
		t = pw.last
	}
	pw.last = t
	pw.ipID++
	seg.IPID = pw.ipID
	pw.frame = AppendFrame(pw.frame[:0], seg)
	ns := t.UnixNano()
	binary.LittleEndian.PutUint32(pw.rec[0:], uint32(ns/1e9))
	binary.LittleEndian.PutUint32(pw.rec[4:], uint32(ns%1e9))
	binary.LittleEndian.PutUint32(pw.rec[8:], uint32(len(pw.frame)))
	binary.LittleEndian.PutUint32(pw.rec[12:], uint32(len(pw.frame)))
	if _, err := pw.bw.Write(pw.rec[:]); err != nil {
		pw.err = err
		return
	}
	if _, err := pw.bw.Write(pw.frame); err != nil {
		pw.err = err
	}
}

// Frame describes one synthesized Ethernet/IP/TCP packet. Src and Dst
// must both be IPv4 or both IPv6 addresses.
type Frame struct {
	Src, Dst netip.AddrPort
	Seq, Ack uint32
	Flags    uint8
	Window   uint16 // 0 means 65535
	IPID     uint16 // IPv4 identification
	Payload  []byte
}

// Fixed MAC addresses of synthesized frames (locally administered); the
// lower address of a flow has macA.
var (
	macA = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a}
	macB = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b}
)

// AppendFrame appends an Ethernet II frame carrying s over IPv4 or IPv6,
// with correct IP and TCP checksums, to dst. Its TCP header has no options;
// the payload must fit the IP length fields (at most MaxMSS bytes).
func AppendFrame(dst []byte, s *Frame) []byte {
	v6 := s.Src.Addr().Is6()
	srcMAC, dstMAC := macA, macB
	if s.Src.Compare(s.Dst) > 0 {
		srcMAC, dstMAC = macB, macA
	}
	dst = append(dst, dstMAC[:]...)
	dst = append(dst, srcMAC[:]...)
	tcpLen := 20 + len(s.Payload)
	var ipStart int
	if v6 {
		dst = binary.BigEndian.AppendUint16(dst, etherTypeIPv6)
		ipStart = len(dst)
		dst = append(dst, 0x60, 0, 0, 0)
		dst = binary.BigEndian.AppendUint16(dst, uint16(tcpLen))
		dst = append(dst, protoTCP, 64)
		a, b := s.Src.Addr().As16(), s.Dst.Addr().As16()
		dst = append(dst, a[:]...)
		dst = append(dst, b[:]...)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, etherTypeIPv4)
		ipStart = len(dst)
		dst = append(dst, 0x45, 0)
		dst = binary.BigEndian.AppendUint16(dst, uint16(20+tcpLen))
		dst = binary.BigEndian.AppendUint16(dst, s.IPID)
		dst = append(dst, 0x40, 0, 64, protoTCP, 0, 0) // DF, TTL 64, checksum below
		a, b := s.Src.Addr().As4(), s.Dst.Addr().As4()
		dst = append(dst, a[:]...)
		dst = append(dst, b[:]...)
		binary.BigEndian.PutUint16(dst[ipStart+10:], ^Fold(OnesSum(0, dst[ipStart:ipStart+20])))
	}
	tcpStart := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, s.Src.Port())
	dst = binary.BigEndian.AppendUint16(dst, s.Dst.Port())
	dst = binary.BigEndian.AppendUint32(dst, s.Seq)
	dst = binary.BigEndian.AppendUint32(dst, s.Ack)
	win := s.Window
	if win == 0 {
		win = 65535
	}
	dst = append(dst, 5<<4, s.Flags)
	dst = binary.BigEndian.AppendUint16(dst, win)
	dst = append(dst, 0, 0, 0, 0) // checksum, urgent pointer
	dst = append(dst, s.Payload...)
	var sum uint32
	if v6 {
		sum = OnesSum(sum, dst[ipStart+8:ipStart+40])
	} else {
		sum = OnesSum(sum, dst[ipStart+12:ipStart+20])
	}
	sum += protoTCP + uint32(tcpLen)
	binary.BigEndian.PutUint16(dst[tcpStart+16:], ^Fold(OnesSum(sum, dst[tcpStart:])))
	return dst
}

// OnesSum adds b as big-endian 16-bit words to sum (RFC 1071).
func OnesSum(sum uint32, b []byte) uint32 {
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

// Fold folds the carries of a ones' complement sum into 16 bits.
func Fold(sum uint32) uint16 {
	for sum > 0xFFFF {
		sum = sum>>16 + sum&0xFFFF
	}
	return uint16(sum)
}
