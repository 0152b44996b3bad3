package capture

import (
	"net/netip"
	"sort"
	"time"
)

// Chunk is a piece of a reassembled stream as one captured segment carried
// it (after trimming bytes already delivered).
type Chunk struct {
	Off   uint64 // stream offset of the first byte
	Len   int
	Frame int // capture frame that carried the bytes
	Time  time.Time
	pos   int // index of the first byte in Stream.data
}

// Gap is a range of stream offsets that the capture does not contain: lost
// packets, or packets cut by the snap length.
type Gap struct {
	Off uint64
	Len uint64
}

// Run is a contiguous range of a stream's bytes, between gaps.
type Run struct {
	Off  uint64 // stream offset of Data[0]
	Data []byte
}

// Stream is one direction of a TCP connection, reassembled in sequence
// order. Stream offsets count from the first byte after the SYN, or, when the
// capture holds no SYN for this direction, from the first byte captured.
type Stream struct {
	Src, Dst netip.AddrPort
	SawSYN   bool   // offsets are relative to ISN+1
	ISN      uint32 // initial sequence number (the SYN's, or the first seen byte's minus 1)
	SawFIN   bool
	SawRST   bool

	Chunks []Chunk // delivered bytes in stream order
	Gaps   []Gap   // holes between chunks, in order

	Retransmitted int  // segments that carried only already-delivered bytes
	Overlapping   int  // segments partly overlapping delivered bytes (trimmed)
	OutOfOrder    int  // segments that arrived ahead of a hole and were held
	Truncated     bool // MaxStreamBytes or MaxTotalBytes reached: later bytes were not kept

	started      bool
	next         uint32 // sequence number of the next byte to deliver
	nextOff      uint64 // its stream offset
	data         []byte
	pending      []pendingSeg
	pendingBytes int
	lim          *Limits
	tot          *totals
}

type pendingSeg struct {
	seq   uint32
	data  []byte
	frame int
	time  time.Time
}

// Len returns the stream offset just after the last byte delivered or lost.
func (s *Stream) Len() uint64 { return s.nextOff }

// Bytes returns the number of bytes kept.
func (s *Stream) Bytes() int { return len(s.data) }

// Runs returns the contiguous runs of the stream, split at gaps.
func (s *Stream) Runs() []Run {
	var runs []Run
	for _, c := range s.Chunks {
		d := s.data[c.pos : c.pos+c.Len]
		if n := len(runs); n > 0 && runs[n-1].Off+uint64(len(runs[n-1].Data)) == c.Off {
			r := &runs[n-1]
			r.Data = s.data[c.pos-len(r.Data) : c.pos+c.Len]
			continue
		}
		runs = append(runs, Run{Off: c.Off, Data: d})
	}
	return runs
}

// ChunkAt returns the chunk holding stream offset off, and false if the
// offset was not captured.
func (s *Stream) ChunkAt(off uint64) (Chunk, bool) {
	i := sort.Search(len(s.Chunks), func(i int) bool {
		c := s.Chunks[i]
		return c.Off+uint64(c.Len) > off
	})
	if i < len(s.Chunks) && s.Chunks[i].Off <= off {
		return s.Chunks[i], true
	}
	return Chunk{}, false
}

// segment feeds one TCP segment of this direction.
func (s *Stream) segment(seg *Segment) {
	seq := seg.Seq
	if !s.started {
		switch {
		case seg.Flags&TCPSyn != 0:
			s.SawSYN, s.ISN, s.next = true, seq, seq+1
		case len(seg.Payload) > 0 || seg.Flags&TCPFin != 0:
			s.ISN, s.next = seq-1, seq
		default:
			return // a bare ACK says nothing about this direction's data
		}
		s.started = true
	}
	if seg.Flags&TCPSyn != 0 {
		seq++
	}
	if seg.Flags&TCPFin != 0 {
		s.SawFIN = true
	}
	if seg.Flags&TCPRst != 0 {
		s.SawRST = true
	}
	if len(seg.Payload) > 0 {
		s.insert(seq, seg.Payload, seg.Frame, seg.Time)
	}
}

func (s *Stream) insert(seq uint32, data []byte, frame int, t time.Time) {
	rel := int32(seq - s.next)
	if rel < 0 {
		if int64(len(data)) <= -int64(rel) {
			s.Retransmitted++
			return
		}
		data = data[-rel:]
		s.Overlapping++
		rel = 0
	}
	if rel == 0 {
		s.deliver(data, frame, t)
		s.drain()
		return
	}
	s.OutOfOrder++
	for len(s.pending) > 0 && (s.pendingBytes+len(data) > s.lim.MaxPendingBytes ||
		len(s.pending) >= s.lim.MaxPendingSegments || s.tot.pending+len(data) > s.lim.MaxTotalPending) {
		s.skipToPending()
	}
	if rel = int32(seq - s.next); rel <= 0 {
		// Declaring gaps delivered held bytes up to or past this segment.
		s.OutOfOrder--
		s.insert(seq, data, frame, t)
		return
	}
	if len(data) > s.lim.MaxPendingBytes || s.tot.pending+len(data) > s.lim.MaxTotalPending {
		s.skip(uint32(rel))
		s.deliver(data, frame, t)
		s.drain()
		return
	}
	s.pending = append(s.pending, pendingSeg{seq: seq, data: append([]byte(nil), data...), frame: frame, time: t})
	s.pendingBytes += len(data)
	s.tot.pending += len(data)
}

// deliver appends in-order bytes at s.next.
func (s *Stream) deliver(data []byte, frame int, t time.Time) {
	n := len(data)
	if !s.Truncated {
		room := min(s.lim.MaxStreamBytes-len(s.data), s.lim.MaxTotalBytes-s.tot.kept)
		keep := min(n, max(room, 0))
		if keep < n {
			s.Truncated = true
		}
		if keep > 0 {
			s.Chunks = append(s.Chunks, Chunk{Off: s.nextOff, Len: keep, Frame: frame, Time: t, pos: len(s.data)})
			s.data = append(s.data, data[:keep]...)
			s.tot.kept += keep
		}
	}
	s.next += uint32(n)
	s.nextOff += uint64(n)
}

// skip declares the next n bytes lost.
func (s *Stream) skip(n uint32) {
	if n == 0 {
		return
	}
	s.Gaps = append(s.Gaps, Gap{Off: s.nextOff, Len: uint64(n)})
	s.next += n
	s.nextOff += uint64(n)
}

// drain delivers every held segment that has become in order.
func (s *Stream) drain() {
	for len(s.pending) > 0 {
		i := s.lowestPending()
		p := s.pending[i]
		rel := int32(p.seq - s.next)
		if rel > 0 {
			return
		}
		s.removePending(i)
		if int64(len(p.data)) <= -int64(rel) {
			s.Retransmitted++
			continue
		}
		s.deliver(p.data[-rel:], p.frame, p.time)
	}
}

// skipToPending declares the bytes up to the lowest held segment lost and
// delivers from there.
func (s *Stream) skipToPending() {
	i := s.lowestPending()
	if rel := int32(s.pending[i].seq - s.next); rel > 0 {
		s.skip(uint32(rel))
	}
	s.drain()
}

func (s *Stream) lowestPending() int {
	best := 0
	for i := range s.pending {
		if int32(s.pending[i].seq-s.pending[best].seq) < 0 {
			best = i
		}
	}
	return best
}

func (s *Stream) removePending(i int) {
	s.pendingBytes -= len(s.pending[i].data)
	s.tot.pending -= len(s.pending[i].data)
	last := len(s.pending) - 1
	s.pending[i] = s.pending[last]
	s.pending[last] = pendingSeg{}
	s.pending = s.pending[:last]
}

// flush declares every hole before held segments lost and delivers them.
func (s *Stream) flush() {
	for len(s.pending) > 0 {
		s.skipToPending()
	}
}
