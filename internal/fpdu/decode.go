package fpdu

import "encoding/binary"

// Frame is one FPDU decoded from a buffer by DecodeFPDU.
type Frame struct {
	// Length is the ULPDU_Length field (0 if src was too short for it).
	Length int
	// ULPDU is the ULPDU with markers stripped: a view of src when no
	// marker fell inside it, else the copy in dst. It is shorter than
	// Length when src ends early.
	ULPDU []byte
	// PadLen is the number of PAD octets (RFC 5044 §4.1).
	PadLen int
	// CRC is the received trailer; ComputedCRC is the CRC32c of the
	// octets it covers. They are compared only with Options.CRC.
	CRC, ComputedCRC uint32
	// Size is the number of octets of src consumed, markers included.
	Size int
	// Markers is the number of markers stripped (with Options.RecvMarkers).
	Markers int
	// BadMarkers counts stripped markers whose FPDUPTR did not point at
	// this FPDU's ULPDU_Length (ErrMarker).
	BadMarkers int
	// SloppyMarkers counts stripped markers with bits set that the sender
	// must leave zero (the reserved octets, the two low bits of FPDUPTR):
	// a receiver ignores them (RFC 5044 §4.2), so they are no error.
	SloppyMarkers int
}

// DecodeFPDU decodes the FPDU at the start of src, for tools. streamOff is
// the offset of src[0] in the sender's stream counted from its first FPDU;
// it places the markers when opts.RecvMarkers is set. The ULPDU is
// returned as a view of src when no marker fell inside it, else it is
// appended to dst[:0] (which allocates only if cap(dst) is too small).
//
// Framing problems are reported as errors, the first one in stream order
// (ErrMarker, ErrULPDUTooShort, ErrULPDUTooLong, ErrTruncated, ErrCRC),
// but the Frame still holds what was read: a bad ULPDU_Length is followed
// as given, and a truncated FPDU returns the ULPDU octets present.
func DecodeFPDU(dst, src []byte, streamOff uint64, opts Options) (Frame, error) {
	d := decoder{src: src, m: newMarkerStream(opts.RecvMarkers, streamOff)}
	var f Frame
	d.m.startFPDU()
	if d.m.due() && !d.marker(true) {
		return d.frame(f), d.truncated()
	}
	var lb [HeaderLen]byte
	if !d.read(lb[:], true) {
		return d.frame(f), d.truncated()
	}
	f.Length = int(binary.BigEndian.Uint16(lb[:]))
	switch {
	case f.Length < MinULPDU:
		d.note(ErrULPDUTooShort)
	case f.Length > opts.maxULPDU():
		d.note(ErrULPDUTooLong)
	}
	var out []byte
	copying := false
	for need := f.Length; need > 0; {
		b := d.chunk(need, true)
		if len(b) == 0 {
			f.ULPDU = out
			return d.frame(f), d.truncated()
		}
		switch {
		case out == nil && !copying:
			out = b
		case !copying:
			out = append(dst[:0], out...)
			copying = true
			fallthrough
		default:
			out = append(out, b...)
		}
		need -= len(b)
	}
	f.ULPDU = out
	f.PadLen = PadLen(f.Length)
	var tb [CRCLen]byte
	if !d.read(tb[:f.PadLen], true) {
		return d.frame(f), d.truncated()
	}
	if d.m.due() && !d.marker(true) { // the marker before the CRC field
		return d.frame(f), d.truncated()
	}
	f.ComputedCRC = d.crc
	if !d.read(tb[:], false) {
		return d.frame(f), d.truncated()
	}
	f.CRC = binary.LittleEndian.Uint32(tb[:])
	if opts.CRC && f.CRC != f.ComputedCRC {
		d.note(ErrCRC)
	}
	return d.frame(f), d.err
}

// decoder walks the raw octets of one FPDU in a buffer.
type decoder struct {
	src     []byte
	off     int
	m       markerStream
	crc     uint32
	markers int
	bad     int
	sloppy  int
	err     error
}

// note records the first problem found.
func (d *decoder) note(err error) {
	if d.err == nil {
		d.err = err
	}
}

// truncated returns the error for src ending inside the FPDU: the first
// problem found before that, else ErrTruncated.
func (d *decoder) truncated() error {
	d.note(ErrTruncated)
	return d.err
}

// frame fills in the decoder's totals.
func (d *decoder) frame(f Frame) Frame {
	f.Size = d.off
	f.Markers = d.markers
	f.BadMarkers = d.bad
	f.SloppyMarkers = d.sloppy
	return f
}

// chunk returns up to n next octets of the FPDU as a view of src, passing
// a marker first if one is due and stopping before the next; cover says
// whether they count in the CRC. It returns an empty slice at the end of
// src.
func (d *decoder) chunk(n int, cover bool) []byte {
	if d.m.due() && !d.marker(cover) {
		return nil
	}
	if d.m.on {
		if room := d.m.room(); uint64(n) > room {
			n = int(room)
		}
	}
	if avail := len(d.src) - d.off; n > avail {
		n = avail
	}
	b := d.src[d.off : d.off+n]
	d.off += n
	d.m.pos += uint64(n)
	if cover {
		d.crc = UpdateCRC32c(d.crc, b)
	}
	return b
}

// read fills p with the next octets of the FPDU; false if src ends first.
func (d *decoder) read(p []byte, cover bool) bool {
	for len(p) > 0 {
		b := d.chunk(len(p), cover)
		if len(b) == 0 {
			return false
		}
		p = p[copy(p, b):]
	}
	return true
}

// marker passes the marker due now, checking it; false if src ends first.
func (d *decoder) marker(cover bool) bool {
	if len(d.src)-d.off < MarkerLen {
		d.off = len(d.src)
		return false
	}
	mb := d.src[d.off : d.off+MarkerLen]
	if cover {
		d.crc = UpdateCRC32c(d.crc, mb)
	}
	d.markers++
	if !markerOK(mb, d.m.fpduptr()) {
		d.bad++
		d.note(ErrMarker)
	}
	if markerSloppy(mb) {
		d.sloppy++
	}
	d.off += MarkerLen
	d.m.passMarker()
	return true
}
