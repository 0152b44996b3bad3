package fpdu

import (
	"encoding/binary"
	"net"
)

// Writer frames ULPDUs into FPDUs and sends them (RFC 5044 §4). It is not
// safe for concurrent use.
//
// Append queues FPDUs; Flush sends everything queued with one writev (one
// net.Buffers write). The ULPDU_Length field, the header given to Append,
// PAD, CRC and markers are built in a per-Writer arena; payload pieces
// longer than 128 octets are sent in place, never copied, so they must
// stay unchanged until the Flush that sends them returns (shorter ones are
// copied into the arena: cheaper than an iovec each). In steady state
// nothing is allocated.
type Writer struct {
	c     *Conn
	nc    net.Conn
	crcOn bool
	m     markerStream
	crc   uint32
	// crcFrom: arena[crcFrom:] is covered by the CRC but not yet in crc.
	crcFrom int

	arena []byte      // ULPDU_Length, headers, PAD, CRC and markers of queued FPDUs
	iov   net.Buffers // queued slices, in stream order
	out   net.Buffers // the copy of iov that WriteTo consumes
	err   error       // sticky write error

	hold bool // Responder rule still to be checked

	raw rawWriter // TryFlush's non-blocking writev

	copyAll bool // AppendCopy in progress
}

func (w *Writer) init(c *Conn) {
	w.c = c
	w.nc = c.nc
	w.crcOn = c.opts.CRC
	w.m = newMarkerStream(c.opts.SendMarkers, 0)
	w.hold = c.opts.HoldSendUntilReceive
	w.arena = make([]byte, 0, 256)
	w.iov = make(net.Buffers, 0, 16)
	w.raw.init(c.nc)
}

// copyMax is the largest payload piece Append copies into the arena
// instead of queuing it by reference: for tiny pieces a copy is cheaper
// than an iovec entry of its own in the kernel's writev.
const copyMax = 128

// zeroPad is the source of PAD octets.
var zeroPad [3]byte

// Append queues one FPDU whose ULPDU is hdr followed by the payload
// pieces (RFC 5044 §4.1). hdr is copied; the payload pieces may be
// referenced and must not change until the next Flush returns. The ULPDU
// must be MinULPDU to 65535 octets long. Nothing is sent until Flush.
func (w *Writer) Append(hdr []byte, payload ...[]byte) error {
	if w.err != nil {
		return w.err
	}
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
	w.crc = 0
	w.crcFrom = len(w.arena)
	w.m.startFPDU()
	var lb [HeaderLen]byte
	binary.BigEndian.PutUint16(lb[:], uint16(n))
	w.emitCopy(lb[:])
	w.emitCopy(hdr)
	for _, p := range payload {
		if len(p) <= copyMax || w.copyAll {
			w.emitCopy(p)
		} else {
			w.emitRef(p)
		}
	}
	w.emitCopy(zeroPad[:PadLen(n)])
	if w.m.due() {
		// A marker due where the CRC field starts is inside the FPDU and
		// covered by the CRC (marker.go).
		w.emitMarker()
	}
	var tb [CRCLen]byte
	if w.crcOn {
		w.flushCRC()
		binary.LittleEndian.PutUint32(tb[:], w.crc)
	}
	// The trailer is not covered by the CRC: nothing flushes the arena's
	// pending octets again in this FPDU, and no marker can fall inside
	// it (every FPDU field is 4-aligned in the stream).
	w.emitCopy(tb[:])
	return nil
}

// Flush sends everything queued with one vectored write. With the
// Responder rule it first waits for the first received FPDU header.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.iov) == 0 {
		return nil
	}
	if w.hold {
		<-w.c.hold
		if w.c.closed.Load() {
			w.err = net.ErrClosed
			w.reset()
			return w.err
		}
		w.hold = false
	}
	w.out = w.iov
	_, err := w.out.WriteTo(w.nc)
	w.reset()
	if err != nil {
		w.err = err
	}
	return err
}

// AppendCopy is Append, except that the payload is copied into the arena:
// the FPDU carries the payload as it was when AppendCopy returned, and its
// CRC matches those bytes whatever happens to the source afterwards. The
// engine uses it for Read Responses with CRC on, whose source memory the
// responder does not own (its application, or later messages, may modify it
// while the response waits to be written).
func (w *Writer) AppendCopy(hdr []byte, payload ...[]byte) error {
	w.copyAll = true
	err := w.Append(hdr, payload...)
	w.copyAll = false
	return err
}

// WriteFPDU is Append followed by Flush.
func (w *Writer) WriteFPDU(hdr []byte, payload ...[]byte) error {
	if err := w.Append(hdr, payload...); err != nil {
		return err
	}
	return w.Flush()
}

// Buffered returns the number of octets queued and not yet flushed.
func (w *Writer) Buffered() int {
	n := 0
	for _, b := range w.iov {
		n += len(b)
	}
	return n
}

// reset forgets the queued slices, dropping references to payloads.
func (w *Writer) reset() {
	clear(w.iov)
	w.iov = w.iov[:0]
	w.out = nil
	w.arena = w.arena[:0]
}

// The CRC of an FPDU is computed lazily over the arena: the octets
// arena[crcFrom:] are covered but not yet in crc. Payload pieces sent by
// reference are added in stream order by emitRef, after flushing what
// precedes them; so each FPDU costs one CRC call per referenced piece
// plus one per run of arena octets.

// flushCRC adds the pending arena octets to the CRC.
func (w *Writer) flushCRC() {
	if w.crcFrom < len(w.arena) {
		w.crc = UpdateCRC32c(w.crc, w.arena[w.crcFrom:])
		w.crcFrom = len(w.arena)
	}
}

// nextPiece returns the longest prefix of b that fits before the next
// marker, appending the marker first when one is due now.
func (w *Writer) nextPiece(b []byte) []byte {
	if !w.m.on {
		return b
	}
	if w.m.due() {
		w.emitMarker()
	}
	if r := w.m.room(); uint64(len(b)) > r {
		return b[:r]
	}
	return b
}

// emitCopy appends b to the stream through the arena, inserting markers.
func (w *Writer) emitCopy(b []byte) {
	for len(b) > 0 {
		q := w.nextPiece(b)
		w.pushArena(q)
		w.m.pos += uint64(len(q))
		b = b[len(q):]
	}
}

// emitRef appends payload b to the stream by reference, inserting markers.
func (w *Writer) emitRef(b []byte) {
	for len(b) > 0 {
		q := w.nextPiece(b)
		w.iov = append(w.iov, q)
		if w.crcOn {
			w.flushCRC()
			w.crc = UpdateCRC32c(w.crc, q)
		}
		w.m.pos += uint64(len(q))
		b = b[len(q):]
	}
}

// emitMarker appends the marker due now.
func (w *Writer) emitMarker() {
	var mb [MarkerLen]byte
	putMarker(mb[:], w.m.fpduptr())
	w.pushArena(mb[:])
	w.m.passMarker()
}

// pushArena copies b into the arena and queues it, extending the last
// queued slice when it ends where b now starts. b itself never escapes.
func (w *Writer) pushArena(b []byte) {
	start := len(w.arena)
	w.arena = append(w.arena, b...)
	if k := len(w.iov); k > 0 && start > 0 {
		last := w.iov[k-1]
		if n := len(last); n > 0 && cap(last) >= n+len(b) && &last[n-1] == &w.arena[start-1] {
			w.iov[k-1] = last[:n+len(b)]
			return
		}
	}
	w.iov = append(w.iov, w.arena[start:len(w.arena):cap(w.arena)])
}
