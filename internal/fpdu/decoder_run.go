package fpdu

import "encoding/binary"

// The Decoder's state machine: run consumes the staged octets in stream
// order as far as the current step allows. Every field, marker and ULPDU
// octet goes through take (or marker), which stops before each marker
// position; a field or marker cut by the end of what was staged is
// completed from the next octets, so that at NeedBytes nothing staged is
// left unconsumed.

// run advances through the staged octets until it needs more, the caller
// must place, the FPDU ended, or an error.
func (d *Decoder) run() {
	for d.err == nil {
		switch d.ph {
		case dLen:
			if !d.field(HeaderLen, true) {
				return
			}
			n := int(binary.BigEndian.Uint16(d.fb[:]))
			if n < MinULPDU {
				d.fail(ErrULPDUTooShort)
				return
			}
			if n > d.max {
				d.fail(ErrULPDUTooLong)
				return
			}
			d.ulen, d.large = n, n >= directMin
			d.target = min(n, HeaderPeek)
			d.ph = dHdr
		case dHdr:
			for len(d.hdr) < d.target {
				b := d.take(d.target-len(d.hdr), true)
				if len(b) == 0 {
					return
				}
				d.hdr = append(d.hdr, b...)
			}
			d.ph = dPlace
		case dPlace, dDone:
			return
		case dBody:
			for d.rem > 0 {
				var o []byte
				n := d.rem
				if !d.discard {
					o = d.out()
					n = len(o)
				}
				b := d.take(n, true)
				if len(b) == 0 {
					return
				}
				d.placed += copy(o, b)
				d.rem -= len(b)
			}
			d.ph = dPad
		case dPad:
			// PAD is covered by the CRC and otherwise ignored (RFC 5044
			// §4.1).
			if pad := PadLen(d.ulen); pad > 0 && !d.field(pad, true) {
				return
			}
			d.ph = dPreCRC
		case dPreCRC:
			// A marker due where the CRC field starts is inside the FPDU
			// and covered (marker.go).
			if d.m.due() && !d.marker(true) {
				return
			}
			d.fold()
			d.want = d.crc
			d.ph = dCRC
		case dCRC:
			if !d.field(CRCLen, false) {
				return
			}
			d.ph = dDone
			d.boundary = d.m.pos
			if d.crcOn && binary.LittleEndian.Uint32(d.fb[:]) != d.want {
				d.fail(ErrCRC)
			}
		}
	}
}

// field collects an n-octet field (n <= CRCLen) into fb from the staged
// octets, across calls; it reports whether the field is complete.
func (d *Decoder) field(n int, cover bool) bool {
	for d.fn < n {
		b := d.take(n-d.fn, cover)
		if len(b) == 0 {
			return false
		}
		d.fn += copy(d.fb[d.fn:n], b)
	}
	d.fn = 0
	return true
}

// take consumes up to n staged octets of the FPDU, first passing a marker
// if one is due, and stops before the next marker; cover says whether they
// count in the CRC (covered staged octets are added to it lazily, by
// fold). It returns an empty slice when the staged octets run out or a
// marker was bad.
func (d *Decoder) take(n int, cover bool) []byte {
	if d.m.due() && !d.marker(cover) {
		return nil
	}
	k := d.m.clamp(min(n, d.st.w-d.st.r))
	b := d.st.buf[d.st.r : d.st.r+k]
	d.st.r += k
	d.m.pos += uint64(k)
	if !cover {
		d.crcFrom = d.st.r
	}
	return b
}

// marker collects the marker due now from the staged octets, across
// calls, and checks its FPDUPTR (RFC 5044 §4.2: the reserved octets and
// the two low bits are ignored). It reports whether the marker was passed.
func (d *Decoder) marker(cover bool) bool {
	k := copy(d.mk[d.mkn:], d.st.buf[d.st.r:d.st.w])
	d.st.r += k
	d.mkn += k
	if !cover {
		d.crcFrom = d.st.r
	}
	if d.mkn < MarkerLen {
		return false
	}
	d.mkn = 0
	if !markerOK(d.mk[:], d.m.fpduptr()) {
		d.fail(ErrMarker)
		return false
	}
	d.m.passMarker()
	return true
}

// fold adds the covered staged octets not yet in the CRC.
func (d *Decoder) fold() {
	if d.crcOn && d.crcFrom < d.st.r {
		d.crc = UpdateCRC32c(d.crc, d.st.buf[d.crcFrom:d.st.r])
	}
	d.crcFrom = d.st.r
}

// settle gives the staging buffer back to the pool once everything staged
// was consumed.
func (d *Decoder) settle() {
	if d.st.p != nil && d.st.r == d.st.w {
		d.fold()
		d.st.drop()
		d.crcFrom = 0
	}
}

// fail records a sticky error and drops what was staged.
func (d *Decoder) fail(err error) {
	d.err = err
	d.st.drop()
	d.crcFrom = 0
	d.vdst, d.extra = 0, 0
}
