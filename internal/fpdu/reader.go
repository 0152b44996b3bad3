package fpdu

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
)

// Reader deframes the received stream: it checks and strips markers,
// checks ULPDU_Length and the CRC, and hands the ULPDU to the caller in
// pieces (RFC 5044 §4, §6). It is not safe for concurrent use.
//
// Use: n, err := Next(); then Read or Discard exactly n ULPDU octets in any
// pieces; then End, which reads PAD and CRC and checks the CRC.
//
// Small reads are served from a staging buffer that one bulk read fills
// with as many FPDUs as the socket holds; a large Read with nothing staged
// reads the payload straight into the caller's slice (on Linux with one
// readv that also brings the FPDU's trailer and the next header). Staging
// buffers come from a pool and are held only while they hold octets.
//
// Errors are sticky: after a protocol or connection error every call
// returns it again. The one exception is a read deadline that expires in
// Next before any octet of the next FPDU arrived, which may be retried.
// Protocol violations are the package's *wire.ProtocolError values; an end
// of stream inside an FPDU is ErrTruncated; other connection errors are
// returned as the connection reported them.
// Payload octets are delivered before the CRC that covers them is checked
// by End.
type Reader struct {
	c     *Conn
	nc    net.Conn
	crcOn bool
	max   int
	m     markerStream
	crc   uint32
	raw   rawReader

	st stage

	inFPDU bool // between Next and End
	ulpdu  int  // ULPDU_Length of the current FPDU
	rem    int  // ULPDU octets not yet read
	large  bool // the current (or last) FPDU is large: read ahead little
	err    error
	tb     [8]byte // header, marker and trailer scratch

	// Lazy CRC (CRC on, markers off): the staged octets st.buf[crcFrom:st.r]
	// are covered by the CRC but not yet in crc; pend says this is in use.
	// Small FPDUs then cost one CRC call over the staging buffer instead of
	// one per Read.
	pend    bool
	crcFrom int

	released bool // the Responder hold was released
}

func (r *Reader) init(c *Conn) {
	r.c = c
	r.nc = c.nc
	r.crcOn = c.opts.CRC
	r.max = c.opts.maxULPDU()
	r.m = newMarkerStream(c.opts.RecvMarkers, 0)
	r.raw.init(c.nc)
}

// Next starts the next FPDU: it reads a leading marker if one is due and
// the ULPDU_Length field, checks it against MinULPDU and the receive
// bound, and returns it. It returns io.EOF only when the stream ended
// cleanly between FPDUs; an end inside the FPDU is ErrTruncated.
func (r *Reader) Next() (ulpduLen int, err error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.inFPDU {
		return 0, ErrFPDUInProgress
	}
	start := r.m.pos
	r.crc = 0
	r.pend = r.crcOn && !r.m.on
	r.crcFrom = r.st.r
	r.m.startFPDU()
	if r.m.due() {
		err = r.marker(true)
	}
	if err == nil {
		err = r.take(r.tb[:HeaderLen], true)
	}
	if err != nil {
		if r.m.pos == start {
			return 0, r.failAtBoundary(err)
		}
		return 0, r.fail(err)
	}
	n := int(binary.BigEndian.Uint16(r.tb[:HeaderLen]))
	r.release()
	if n < MinULPDU {
		return 0, r.fail(ErrULPDUTooShort)
	}
	if n > r.max {
		return 0, r.fail(ErrULPDUTooLong)
	}
	r.inFPDU = true
	r.ulpdu = n
	r.rem = n
	r.large = n >= directMin
	return n, nil
}

// Fill waits, between FPDUs with nothing staged, until the stream has
// octets, and stages what arrived without starting an FPDU; otherwise it
// returns at once. It lets a caller wait for the next FPDU in a way that
// can be interrupted: a read deadline that expires in Fill consumes
// nothing and leaves the Reader as it was (the next Next may block mid-FPDU,
// where a deadline is fatal). Any other error is sticky, as in Next; an end
// of stream is io.EOF.
func (r *Reader) Fill() error {
	if r.err != nil {
		return r.err
	}
	if r.inFPDU || r.st.r < r.st.w {
		return nil
	}
	if err := r.fillStage(HeaderLen); err != nil {
		return r.failAtBoundary(err)
	}
	return nil
}

// failAtBoundary records err, met between FPDUs before any octet of the
// next one, as sticky (an end of stream stays io.EOF, not ErrTruncated),
// except an expired read deadline, which consumed nothing and may be
// retried. It returns err.
func (r *Reader) failAtBoundary(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	r.err = err
	r.release()
	return err
}

// Staged reports whether the staged octets hold the whole next FPDU (its
// ULPDU_Length, ULPDU, PAD and CRC), so that reading it cannot block. It
// is for use between FPDUs and always reports false while markers are
// received.
func (r *Reader) Staged() bool {
	if r.err != nil || r.inFPDU || r.m.on {
		return false
	}
	avail := r.st.w - r.st.r
	if avail < HeaderLen {
		return false
	}
	n := int(binary.BigEndian.Uint16(r.st.buf[r.st.r:]))
	return avail >= HeaderLen+n+PadLen(n)+CRCLen
}

// Remaining returns the number of octets of the current ULPDU not yet read
// or discarded.
func (r *Reader) Remaining() int { return r.rem }

// Read reads exactly len(p) further ULPDU octets into p. Asking for more
// than Remaining is ErrNotInFPDU and consumes nothing.
func (r *Reader) Read(p []byte) error {
	if r.err != nil {
		return r.err
	}
	if !r.inFPDU || len(p) > r.rem {
		return ErrNotInFPDU
	}
	if err := r.take(p, true); err != nil {
		return r.fail(err)
	}
	r.rem -= len(p)
	return nil
}

// Discard skips n further ULPDU octets (they still count in the CRC).
func (r *Reader) Discard(n int) error {
	if r.err != nil {
		return r.err
	}
	if !r.inFPDU || n < 0 || n > r.rem {
		return ErrNotInFPDU
	}
	if err := r.skip(n); err != nil {
		return r.fail(err)
	}
	r.rem -= n
	return nil
}

// End finishes the current FPDU after all its ULPDU octets were read: it
// reads PAD (ignored, RFC 5044 §4.1) and the CRC and, if CRC was
// negotiated, checks it (ErrCRC).
func (r *Reader) End() error {
	if r.err != nil {
		return r.err
	}
	if !r.inFPDU {
		return ErrNotInFPDU
	}
	if r.rem != 0 {
		return ErrFPDUInProgress
	}
	pad := PadLen(r.ulpdu)
	if err := r.take(r.tb[:pad], true); err != nil {
		return r.fail(err)
	}
	if r.m.due() {
		// The marker before the CRC field is covered (marker.go).
		if err := r.marker(true); err != nil {
			return r.fail(err)
		}
	}
	r.flushCRC()
	r.pend = false
	want := r.crc
	if err := r.take(r.tb[4:8], false); err != nil {
		return r.fail(err)
	}
	r.inFPDU = false
	if r.crcOn && binary.LittleEndian.Uint32(r.tb[4:8]) != want {
		return r.fail(ErrCRC)
	}
	return nil
}

// Buffered returns the number of received octets staged and not yet
// consumed.
func (r *Reader) Buffered() int { return r.st.w - r.st.r }

// fail records a fatal error, mapping an end of stream inside an FPDU to
// ErrTruncated, and releases the staging buffer.
func (r *Reader) fail(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = ErrTruncated
	}
	r.err = err
	r.pend = false
	r.st.drop()
	r.release()
	return err
}

// flushCRC adds the pending staged octets to the CRC (see pend).
func (r *Reader) flushCRC() {
	if r.pend && r.crcFrom < r.st.r {
		r.crc = UpdateCRC32c(r.crc, r.st.buf[r.crcFrom:r.st.r])
		r.crcFrom = r.st.r
	}
}

// consume marks n staged octets as read, giving the buffer back to the
// pool when it is empty.
func (r *Reader) consume(n int) {
	r.st.r += n
	if r.st.r == r.st.w {
		r.flushCRC()
		r.st.drop()
	}
}

// release ends the Responder rule's hold on the Writer, once.
func (r *Reader) release() {
	if !r.released {
		r.released = true
		r.c.releaseHold()
	}
}

// take fills p with the next len(p) octets of the FPDU, stripping and
// checking markers; cover says whether they count in the CRC.
func (r *Reader) take(p []byte, cover bool) error {
	for len(p) > 0 {
		q := p
		if r.m.on {
			if r.m.due() {
				if err := r.marker(cover); err != nil {
					return err
				}
			}
			if room := r.m.room(); uint64(len(q)) > room {
				q = q[:room]
			}
		}
		n, staged, err := r.readRaw(q)
		if cover && r.crcOn && !(staged && r.pend) {
			r.crc = UpdateCRC32c(r.crc, q[:n])
		}
		r.m.pos += uint64(n)
		p = p[n:]
		if err != nil {
			return err
		}
	}
	return nil
}

// skip consumes n octets of the FPDU (covered by the CRC) without
// delivering them.
func (r *Reader) skip(n int) error {
	for n > 0 {
		q := n
		if r.m.on {
			if r.m.due() {
				if err := r.marker(true); err != nil {
					return err
				}
			}
			if room := r.m.room(); uint64(q) > room {
				q = int(room)
			}
		}
		if r.st.r == r.st.w {
			if err := r.fillStage(q); err != nil {
				return err
			}
		}
		if avail := r.st.w - r.st.r; q > avail {
			q = avail
		}
		if r.crcOn && !r.pend {
			r.crc = UpdateCRC32c(r.crc, r.st.buf[r.st.r:r.st.r+q])
		}
		r.consume(q)
		r.m.pos += uint64(q)
		n -= q
	}
	return nil
}

// marker reads, checks and strips the marker due now.
func (r *Reader) marker(cover bool) error {
	want := r.m.fpduptr()
	mb := r.tb[:MarkerLen]
	for got := 0; got < MarkerLen; {
		n, _, err := r.readRaw(mb[got:])
		got += n
		r.m.pos += uint64(n)
		if err != nil {
			return err
		}
	}
	r.m.pos -= MarkerLen
	if cover && r.crcOn {
		r.crc = UpdateCRC32c(r.crc, mb)
	}
	if !markerOK(mb, want) {
		return ErrMarker
	}
	r.m.passMarker()
	return nil
}

// readRaw reads up to len(p) octets of the raw stream into p, at least one
// unless it fails: from the staging buffer if it holds any, else straight
// from the connection for a large p, else through a bulk read into the
// staging buffer. staged says whether they came from the staging buffer.
func (r *Reader) readRaw(p []byte) (n int, staged bool, err error) {
	if r.st.r == r.st.w {
		if len(p) >= directMin {
			n, err = r.direct(p)
			return n, false, err
		}
		if err := r.fillStage(len(p)); err != nil {
			return 0, false, err
		}
	}
	n = copy(p, r.st.buf[r.st.r:r.st.w])
	r.consume(n)
	return n, true, nil
}

// fillStage reads into the empty staging buffer: as much as the socket
// holds, or, while a large FPDU is being read, only need octets and a
// little more, so that its payload is left for a direct read.
func (r *Reader) fillStage(need int) error {
	r.st.take()
	limit := len(r.st.buf)
	if r.large && need+lookahead < limit {
		limit = need + lookahead
	}
	for range maxEmptyReads {
		var n int
		var err error
		if r.raw.ok {
			n, err = r.raw.read(r.st.buf[:limit])
		} else {
			n, err = r.nc.Read(r.st.buf[:limit])
		}
		if n > 0 {
			r.st.r, r.st.w = 0, n
			r.crcFrom = 0
			return nil
		}
		if err != nil {
			r.st.drop()
			return err
		}
	}
	r.st.drop()
	return io.ErrNoProgress
}

// maxEmptyReads bounds the successive Reads that return neither octets
// nor an error (as bufio does).
const maxEmptyReads = 100

// direct reads into p from the connection, with the staging buffer as the
// place for what follows p where the platform reads both at once.
func (r *Reader) direct(p []byte) (int, error) {
	if !r.raw.ok {
		for range maxEmptyReads {
			n, err := r.nc.Read(p)
			if n > 0 || err != nil {
				return n, err
			}
		}
		return 0, io.ErrNoProgress
	}
	r.st.take()
	n, extra, err := r.raw.readv(p, r.st.buf[:lookahead+16])
	if extra > 0 {
		r.st.r, r.st.w = 0, extra
		r.crcFrom = 0
	} else {
		r.st.drop()
	}
	return n, err
}
