package fpdu

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/freelist"
)

// CopyMax is the largest payload piece Encoder.Append (like Writer.Append)
// copies into its arena; longer pieces are referenced, zero-copy. For tiny
// pieces a copy is cheaper than an iovec of their own in writev.
const CopyMax = copyMax

// Encoder frames ULPDUs into FPDUs without I/O (RFC 5044 §4): Append queues
// FPDUs, Bufs hands out what to write as iovecs, and Done consumes what the
// connection accepted, reporting how many FPDUs were fully written. It
// produces exactly the octets the Writer produces for the same sequence
// (ULPDU_Length, ULPDU, PAD, CRC, and markers when opts.SendMarkers), but
// does no I/O itself. It is not safe for concurrent use.
//
// ULPDU_Length, the header given to Append, copied payload pieces, PAD,
// CRC and markers are built in an arena of fixed-size blocks taken from a
// pool; a block goes back to the pool once all its octets are consumed, so
// an idle Encoder holds none and a busy one allocates nothing in steady
// state. Payload pieces longer than CopyMax are referenced: they must stay
// unchanged until Done consumed them (with opts.CRC the CRC was computed
// when they were appended). AppendCopy copies everything.
//
// The Encoder does not apply opts.HoldSendUntilReceive (RFC 5044 §7.1.2,
// the Responder's hold): that is the caller's, which decides when to write.
type Encoder struct {
	crcOn bool
	m     markerStream
	base  uint64 // stream offset where the Encoder started
	crc   uint32

	iov  [][]byte // queued slices, in stream order; iov[head:] pending
	head int
	tail int // index of the arena slice that ends at cur[used], or -1

	ends    []uint64 // queued count at the end of each FPDU; ends[endHead:] pending
	endHead int

	queued, consumed uint64 // octets appended and consumed, since base

	blocks  []encBlock // arena blocks in use, oldest first; the last is cur
	bhead   int
	cur     *[encBlockSize]byte
	used    int // octets of cur in use
	crcFrom int // cur[crcFrom:used] is covered by the CRC but not yet in crc

	// ULPDU_Length and the trailer on their way into the arena (fields,
	// not locals: emit's slices may be kept, so locals would escape).
	lb [HeaderLen]byte
	tb [CRCLen]byte
}

// encBlockSize is the size of one arena block: 16 KiB, a few hundred small
// FPDUs, or a quarter of a 64 KiB ULPDU appended by copy.
const encBlockSize = 16 << 10

// encBlock is an arena block and the queued count after its last octet:
// once that much is consumed, nothing refers to the block.
type encBlock struct {
	b   *[encBlockSize]byte
	end uint64
}

// encPool holds the arena blocks of Encoders with nothing queued; it
// retains up to 256 of them (4 MiB).
var encPool = freelist.New(256, func() *[encBlockSize]byte { return new([encBlockSize]byte) })

// NewEncoder returns an Encoder for a stream whose next octet is at stream
// offset off (markers are positioned relative to the start of full
// operation, RFC 5044 §4.3; see marker.go). opts.CRC and opts.SendMarkers
// apply.
func NewEncoder(opts Options, off uint64) *Encoder {
	return &Encoder{
		crcOn: opts.CRC,
		m:     newMarkerStream(opts.SendMarkers, off),
		base:  off,
		tail:  -1,
	}
}

// Append queues one FPDU whose ULPDU is hdr followed by the payload pieces
// (RFC 5044 §4.1). hdr is copied into the arena; payload pieces longer
// than CopyMax are referenced (zero-copy) and must stay unchanged until
// their octets are consumed by Done; shorter ones are copied. With
// opts.CRC the CRC (RFC 5044 §4.4) is computed now, over the pieces as
// they are now. The ULPDU must be MinULPDU to 65535 octets long
// (ErrSendULPDUTooShort, ErrSendULPDUTooLong: nothing is queued).
func (e *Encoder) Append(hdr []byte, payload ...[]byte) error {
	return e.append(false, hdr, payload)
}

// AppendCopy is Append with every payload piece copied into the arena: the
// FPDU carries the payload as it was when AppendCopy returned, whatever
// happens to the source afterwards (a Read Response whose source memory
// the responder does not own).
func (e *Encoder) AppendCopy(hdr []byte, payload ...[]byte) error {
	return e.append(true, hdr, payload)
}

func (e *Encoder) append(copyAll bool, hdr []byte, payload [][]byte) error {
	n := len(hdr)
	for _, p := range payload {
		n += len(p)
	}
	if n > MaxULPDULen {
		return ErrSendULPDUTooLong
	}
	if n < MinULPDU {
		return ErrSendULPDUTooShort
	}
	e.crc = 0
	e.crcFrom = e.used
	e.m.startFPDU()
	binary.BigEndian.PutUint16(e.lb[:], uint16(n))
	e.emit(e.lb[:], false)
	e.emit(hdr, false)
	for _, p := range payload {
		e.emit(p, !copyAll && len(p) > copyMax)
	}
	e.emit(zeroPad[:PadLen(n)], false)
	if e.m.due() {
		// A marker due where the CRC field starts is inside the FPDU and
		// covered by the CRC (marker.go).
		e.emitMarker()
	}
	if e.crcOn {
		e.fold()
	}
	binary.LittleEndian.PutUint32(e.tb[:], e.crc)
	// The trailer is not covered: nothing folds the arena into crc again
	// in this FPDU, and no marker falls inside it (every FPDU field is
	// 4-aligned in the stream).
	e.emit(e.tb[:], false)
	e.ends = appendCompact(e.ends, &e.endHead, e.queued)
	return nil
}

// Bufs appends to dst the iovecs of everything queued and not yet
// consumed, in order. They stay valid until the next Done or Reset (Append
// only adds octets after them).
func (e *Encoder) Bufs(dst [][]byte) [][]byte {
	return append(dst, e.iov[e.head:]...)
}

// Done consumes n octets from the front of what Bufs returned (0 <= n <=
// Buffered(); a partial write may end inside an iovec). It returns the
// number of FPDUs whose last octet was consumed by this call, so that the
// caller can complete sends in order. Consumed payload references and
// arena blocks are released.
func (e *Encoder) Done(n int) int {
	if n < 0 || n > e.Buffered() {
		panic("fpdu: Encoder.Done beyond what was queued")
	}
	e.consumed += uint64(n)
	for n > 0 {
		b := e.iov[e.head]
		if n < len(b) {
			e.iov[e.head] = b[n:]
			break
		}
		n -= len(b)
		e.iov[e.head] = nil
		e.head++
	}
	done := 0
	for e.endHead < len(e.ends) && e.ends[e.endHead] <= e.consumed {
		e.endHead++
		done++
	}
	if e.consumed == e.queued {
		e.drain()
		return done
	}
	for e.bhead < len(e.blocks)-1 && e.blocks[e.bhead].end <= e.consumed {
		encPool.Put(e.blocks[e.bhead].b)
		e.blocks[e.bhead] = encBlock{}
		e.bhead++
	}
	return done
}

// Buffered returns the number of octets queued and not yet consumed.
func (e *Encoder) Buffered() int { return int(e.queued - e.consumed) }

// Pending returns the number of queued FPDUs not yet fully consumed.
func (e *Encoder) Pending() int { return len(e.ends) - e.endHead }

// Reset drops everything queued (the stream is being aborted): payload
// references and arena blocks are released. The stream position moves
// back to the end of what was consumed, so that FPDUs appended afterwards
// carry the markers of that position; the stream is only whole if no
// FPDU was partly consumed (Pending FPDUs with octets consumed are cut).
func (e *Encoder) Reset() {
	e.queued = e.consumed
	e.m = newMarkerStream(e.m.on, e.base+e.consumed)
	e.drain()
}

// drain forgets every queued slice and releases the arena: everything
// queued was consumed (or is dropped).
func (e *Encoder) drain() {
	clear(e.iov)
	e.iov = e.iov[:0]
	e.head, e.tail = 0, -1
	e.ends = e.ends[:0]
	e.endHead = 0
	for _, b := range e.blocks[e.bhead:] {
		encPool.Put(b.b)
	}
	clear(e.blocks)
	e.blocks = e.blocks[:0]
	e.bhead = 0
	e.cur, e.used, e.crcFrom = nil, 0, 0
}

// The CRC of an FPDU is computed lazily over the arena, as the Writer
// does: cur[crcFrom:used] is covered but not yet in crc. A referenced
// piece, a new block and the trailer fold what precedes them first.

// fold adds the pending arena octets to the CRC.
func (e *Encoder) fold() {
	if e.crcOn && e.crcFrom < e.used {
		e.crc = UpdateCRC32c(e.crc, e.cur[e.crcFrom:e.used])
	}
	e.crcFrom = e.used
}

// emit appends b to the stream, through the arena or (ref) by reference,
// inserting the markers due before and inside it.
func (e *Encoder) emit(b []byte, ref bool) {
	for len(b) > 0 {
		if e.m.due() {
			e.emitMarker()
		}
		q := b[:e.m.clamp(len(b))]
		if !ref {
			e.pushArena(q)
		} else {
			if e.crcOn {
				e.fold()
				e.crc = UpdateCRC32c(e.crc, q)
			}
			e.iov = appendCompact(e.iov, &e.head, q)
			e.tail = -1
			e.queued += uint64(len(q))
		}
		e.m.pos += uint64(len(q))
		b = b[len(q):]
	}
}

// clamp returns how many of the next n octets may pass before the next
// marker (n itself without markers). Call it when no marker is due.
func (m *markerStream) clamp(n int) int {
	if m.on {
		return int(min(uint64(n), m.room()))
	}
	return n
}

// emitMarker appends the marker due now.
func (e *Encoder) emitMarker() {
	var mb [MarkerLen]byte
	putMarker(mb[:], e.m.fpduptr())
	e.pushArena(mb[:])
	e.m.passMarker()
}

// pushArena copies b into the arena and queues it, extending the last
// queued slice when it ends where b now starts. b itself is not kept.
func (e *Encoder) pushArena(b []byte) {
	for len(b) > 0 {
		if e.cur == nil || e.used == encBlockSize {
			e.newBlock()
		}
		start := e.used
		k := copy(e.cur[start:], b)
		e.used += k
		if e.tail >= e.head && e.tail == len(e.iov)-1 {
			e.iov[e.tail] = e.iov[e.tail][:len(e.iov[e.tail])+k]
		} else {
			e.iov = appendCompact(e.iov, &e.head, e.cur[start:e.used])
			e.tail = len(e.iov) - 1
		}
		e.queued += uint64(k)
		e.blocks[len(e.blocks)-1].end = e.queued
		b = b[k:]
	}
}

// newBlock starts a new arena block.
func (e *Encoder) newBlock() {
	e.fold()
	b := encPool.Get()
	e.blocks = appendCompact(e.blocks, &e.bhead, encBlock{b: b, end: e.queued})
	e.cur, e.used, e.crcFrom, e.tail = b, 0, 0, -1
}

// appendCompact appends v to the queue q whose live part is q[*head:],
// first moving the live part to the front when q is full and has room
// there, so that a queue that never empties stops growing.
func appendCompact[T any](q []T, head *int, v T) []T {
	if len(q) == cap(q) && *head > 0 {
		n := copy(q, q[*head:])
		clear(q[n:])
		q = q[:n]
		*head = 0
	}
	return append(q, v)
}
