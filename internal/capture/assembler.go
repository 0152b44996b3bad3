package capture

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
)

// Limits bound what a capture can make the Assembler keep. Zero fields take
// the defaults of DefaultLimits.
type Limits struct {
	MaxConns           int // connections followed; later ones are ignored (and counted)
	MaxStreamBytes     int // bytes kept per direction; the rest is counted, not kept
	MaxPendingBytes    int // out-of-order bytes held per direction before declaring a gap
	MaxPendingSegments int // out-of-order segments held per direction
	MaxNotes           int // notes kept
	// MaxTotalBytes bounds the bytes kept over all streams, and
	// MaxTotalPending the out-of-order bytes held over all streams, so
	// that many connections cannot multiply the per-stream limits.
	MaxTotalBytes   int
	MaxTotalPending int
}

// DefaultLimits are the limits used for zero fields.
var DefaultLimits = Limits{
	MaxConns:           4096,
	MaxStreamBytes:     64 << 20,
	MaxPendingBytes:    4 << 20,
	MaxPendingSegments: 4096,
	MaxNotes:           1000,
	MaxTotalBytes:      256 << 20,
	MaxTotalPending:    64 << 20,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxConns > 0 {
		d.MaxConns = l.MaxConns
	}
	if l.MaxStreamBytes > 0 {
		d.MaxStreamBytes = l.MaxStreamBytes
	}
	if l.MaxPendingBytes > 0 {
		d.MaxPendingBytes = l.MaxPendingBytes
	}
	if l.MaxPendingSegments > 0 {
		d.MaxPendingSegments = l.MaxPendingSegments
	}
	if l.MaxNotes > 0 {
		d.MaxNotes = l.MaxNotes
	}
	if l.MaxTotalBytes > 0 {
		d.MaxTotalBytes = l.MaxTotalBytes
	}
	if l.MaxTotalPending > 0 {
		d.MaxTotalPending = l.MaxTotalPending
	}
	return d
}

// Conn is one TCP connection: two streams, Dir[0] from A to B and Dir[1]
// from B to A, where A is the side that sent the SYN (or, without a SYN in
// the capture, the sender of the first packet seen).
type Conn struct {
	ID       int // 1-based, in order of first packet
	A, B     netip.AddrPort
	Dir      [2]*Stream
	SawSYN   bool // A's SYN is in the capture: A is the active opener
	FirstFrm int  // first frame of the connection
}

// Note is something about a frame worth telling the user (a fragment that
// was not reassembled, a malformed header).
type Note struct {
	Frame int
	Text  string
}

type connKey struct{ lo, hi netip.AddrPort }

func keyOf(a, b netip.AddrPort) connKey {
	if a.Compare(b) > 0 {
		a, b = b, a
	}
	return connKey{a, b}
}

// totals are the bytes kept and held over all streams of an Assembler.
type totals struct {
	kept, pending int
}

// Assembler follows TCP connections and reassembles their streams.
type Assembler struct {
	lim          Limits
	tot          totals
	conns        map[connKey]*Conn
	all          []*Conn
	Notes        []Note
	DroppedConns int // connections beyond MaxConns
	DroppedNotes int // notes beyond MaxNotes

	unknownLinks map[LinkType]bool // noted once each
}

// NewAssembler returns an Assembler with the given limits.
func NewAssembler(lim Limits) *Assembler {
	return &Assembler{lim: lim.withDefaults(), conns: map[connKey]*Conn{}, unknownLinks: map[LinkType]bool{}}
}

func (a *Assembler) note(frame int, format string, args ...any) {
	if len(a.Notes) >= a.lim.MaxNotes {
		a.DroppedNotes++
		return
	}
	a.Notes = append(a.Notes, Note{Frame: frame, Text: fmt.Sprintf(format, args...)})
}

// AddPacket decodes a captured packet and feeds its TCP segment, if any.
// Packets that are not TCP over IP are ignored; fragments and malformed
// headers are noted.
func (a *Assembler) AddPacket(p Packet) {
	seg, err := PacketSegment(p)
	switch {
	case err == nil:
		if p.OrigLen > len(p.Data) {
			a.note(p.Frame, "frame cut by the snap length (%d of %d bytes captured)", len(p.Data), p.OrigLen)
		}
		a.AddSegment(&seg)
	case errors.Is(err, ErrFragment):
		a.note(p.Frame, "IP fragment %s -> %s not reassembled", seg.Src.Addr(), seg.Dst.Addr())
	case errors.Is(err, ErrNotIP), errors.Is(err, ErrNotTCP):
	case errors.Is(err, ErrUnknownLink):
		if !a.unknownLinks[p.LinkType] {
			a.unknownLinks[p.LinkType] = true
			a.note(p.Frame, "link type %d not supported: its packets are skipped", p.LinkType)
		}
	default:
		a.note(p.Frame, "%v", err)
	}
}

// AddSegment feeds one TCP segment.
func (a *Assembler) AddSegment(seg *Segment) {
	k := keyOf(seg.Src, seg.Dst)
	c := a.conns[k]
	isSYN := seg.Flags&(TCPSyn|TCPAck) == TCPSyn
	if c != nil && isSYN {
		// A new SYN on a known 4-tuple starts a new connection when the old
		// one was opened by another SYN or has ended.
		d := c.dir(seg.Src)
		if (d.SawSYN && d.ISN != seg.Seq) || d.SawFIN || d.SawRST {
			c = nil
		}
	}
	if c == nil {
		if len(a.all) >= a.lim.MaxConns {
			a.DroppedConns++
			return
		}
		c = &Conn{ID: len(a.all) + 1, A: seg.Src, B: seg.Dst, FirstFrm: seg.Frame}
		c.SawSYN = isSYN
		c.Dir[0] = &Stream{Src: seg.Src, Dst: seg.Dst, lim: &a.lim, tot: &a.tot}
		c.Dir[1] = &Stream{Src: seg.Dst, Dst: seg.Src, lim: &a.lim, tot: &a.tot}
		a.conns[k] = c
		a.all = append(a.all, c)
	}
	c.dir(seg.Src).segment(seg)
}

func (c *Conn) dir(src netip.AddrPort) *Stream {
	if src == c.A {
		return c.Dir[0]
	}
	return c.Dir[1]
}

// Flush ends reassembly: bytes still missing before held segments are
// declared gaps and the held segments delivered. Call it after the last
// packet.
func (a *Assembler) Flush() {
	for _, c := range a.all {
		c.Dir[0].flush()
		c.Dir[1].flush()
	}
}

// Conns returns the connections in order of their first packet.
func (a *Assembler) Conns() []*Conn { return a.all }

// ReadAll reads every packet of r into a new Assembler and flushes it.
func ReadAll(r PacketReader, lim Limits) (*Assembler, error) {
	a := NewAssembler(lim)
	for {
		p, err := r.Next()
		if err != nil {
			a.Flush()
			if errors.Is(err, io.EOF) {
				return a, nil
			}
			return a, err
		}
		a.AddPacket(p)
	}
}

// ReadFile reads the pcap or pcapng file at path into a new Assembler.
func ReadFile(path string, lim Limits) (*Assembler, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return nil, err
	}
	return ReadAll(r, lim)
}
