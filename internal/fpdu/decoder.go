package fpdu

import (
	"math"
	"strconv"
)

// HeaderPeek is the number of ULPDU octets a Decoder stages before it asks
// where the rest of the ULPDU goes: the size of a DDP tagged header
// (RFC 5041 §5.2), the longer of the two DDP headers (an untagged header is
// 18 octets with its MSN and MO, of which the first 14 tell the tagged from
// the untagged and carry the queue number). Every valid ULPDU has at least
// MinULPDU = HeaderPeek octets.
const HeaderPeek = 14

// Step says what a Decoder needs next.
type Step uint8

const (
	// NeedBytes: write stream octets into Buf() and call Advance.
	NeedBytes Step = iota
	// NeedPlace: a new FPDU's first ULPDU octets are staged: read
	// ULPDULen and Header, then call Place (or Stage for more of the
	// header).
	NeedPlace
	// FPDUDone: the FPDU ended (or the stream failed): Err says whether
	// its framing and CRC were good; call Next to go on.
	FPDUDone
)

// String names the step.
func (s Step) String() string {
	switch s {
	case NeedBytes:
		return "NeedBytes"
	case NeedPlace:
		return "NeedPlace"
	case FPDUDone:
		return "FPDUDone"
	}
	return "Step(" + strconv.Itoa(int(s)) + ")"
}

// Decoder deframes one direction's received byte stream without I/O
// (RFC 5044 §4-§6): the caller moves octets from the connection into the
// slices it hands out, and it checks and strips markers (§4.2, §4.3),
// checks ULPDU_Length (§4.1) and the CRC (§4.4), and delivers each ULPDU
// as a staged header plus the rest placed where the caller says. It is the
// sans-I/O form of Reader and accepts and rejects exactly what the Reader
// does, with the same errors. It is not safe for concurrent use.
//
// Use, for each FPDU:
//
//	for d.Step() == NeedBytes { n := read(d.Buf()); d.Advance(n) }
//	// NeedPlace: d.ULPDULen(), d.Header(); optionally d.Stage(extra) and
//	// more NeedBytes; then d.Place(dst) (nil: discard the rest), or
//	// d.PlaceV(pieces) for a scatter list
//	for d.Step() == NeedBytes { n := read(d.Buf()); d.Advance(n) }
//	// FPDUDone: d.Err() == nil: the FPDU was good; d.Next()
//
// A read into Buf() may bring many FPDUs at once: they are staged, and the
// following FPDUs reach NeedPlace and FPDUDone without more octets. Once
// Place was given a destination, Buf() is a slice of it (up to the next
// marker), so a large payload is read straight into place; octets already
// staged are copied there by Place. Markers always go through the staging
// buffer, which is taken from a pool only while it holds octets (or is
// handed out by Buf), so an idle Decoder holds none.
//
// The CRC covers exactly what RFC 5044 §4.4 says: ULPDU_Length, ULPDU,
// PAD and every marker inside the FPDU, including a marker due where the
// CRC field starts (docs/fpdu.md, decision 2). Octets placed into a
// destination are added to the CRC when Advance reports them, before the
// caller can change them; payload octets are thus delivered before the CRC
// that covers them is checked, as with the Reader.
//
// Errors are sticky: after ErrCRC, ErrMarker, ErrULPDUTooShort or
// ErrULPDUTooLong, Step is FPDUDone forever, Err returns the error, Buf
// returns nil and Next does nothing. A framing error (a bad marker or
// ULPDU_Length) can end an FPDU before NeedPlace, or during its payload.
type Decoder struct {
	crcOn bool
	max   int
	m     markerStream
	st    stage // staged raw stream octets st.buf[st.r:st.w]
	ph    dphase
	err   error

	ulen    int       // ULPDU_Length of the current FPDU
	hdr     []byte    // staged ULPDU head (Header)
	target  int       // octets wanted in hdr
	dsts    [][]byte  // the destination pieces given to Place or PlaceV
	one     [1][]byte // Place's single piece
	di      int       // the piece being filled
	placed  int       // octets of dsts[di] filled
	discard bool      // Place(nil): the rest of the ULPDU is discarded
	rem     int       // ULPDU octets after hdr not yet delivered
	large   bool      // the current (or last) FPDU is large: stage little

	crc     uint32
	crcFrom int    // st.buf[crcFrom:st.r] is covered but not yet in crc
	want    uint32 // the CRC computed for the current FPDU's trailer

	fb  [CRCLen]byte // a field in progress: ULPDU_Length, PAD or CRC
	fn  int
	mk  [MarkerLen]byte // a marker in progress
	mkn int

	in       uint64 // stream offset after the last octet Advanced
	boundary uint64 // stream offset where the last complete FPDU ended
	vdst     int    // destination octets the last Bufs handed out
	extra    int    // staging octets the last Bufs handed out after them
}

// dphase is where a Decoder is in the current FPDU, in stream order.
type dphase uint8

const (
	dLen    dphase = iota // a leading marker, then ULPDU_Length
	dHdr                  // ULPDU octets into hdr, up to target
	dPlace                // waiting for Place or Stage (NeedPlace)
	dBody                 // the rest of the ULPDU, into dst or discarded
	dPad                  // PAD
	dPreCRC               // a marker due where the CRC field starts
	dCRC                  // the CRC field (not covered)
	dDone                 // FPDUDone
)

// decoderHdrCap is the initial capacity of the staged header: a DDP
// header and an RDMAP header after it, the longest being an Atomic
// Request (RFC 7306 §4.1).
const decoderHdrCap = 64

// NewDecoder returns a Decoder for a stream whose next octet is at stream
// offset off (markers are positioned relative to the start of full
// operation, RFC 5044 §4.3; see marker.go). The next octet must start an
// FPDU. opts.CRC, opts.RecvMarkers and opts.MaxULPDU apply; the other
// fields are for the transmit side.
func NewDecoder(opts Options, off uint64) *Decoder {
	return &Decoder{
		crcOn:    opts.CRC,
		max:      opts.maxULPDU(),
		m:        newMarkerStream(opts.RecvMarkers, off),
		hdr:      make([]byte, 0, decoderHdrCap),
		in:       off,
		boundary: off,
	}
}

// Step returns what is needed next.
func (d *Decoder) Step() Step {
	switch {
	case d.err != nil || d.ph == dDone:
		return FPDUDone
	case d.ph == dPlace:
		return NeedPlace
	}
	return NeedBytes
}

// Err returns the sticky error: ErrCRC (the FPDU just ended failed its
// CRC, RFC 5044 §4.4), ErrMarker (§4.2), ErrULPDUTooShort or
// ErrULPDUTooLong (§4.1, the receive bound), or nil. The values are the
// package's *wire.ProtocolError values, as the Reader reports them.
func (d *Decoder) Err() error { return d.err }

// ULPDULen returns the current FPDU's ULPDU_Length (RFC 5044 §4.1), valid
// from NeedPlace until Next.
func (d *Decoder) ULPDULen() int { return d.ulen }

// Header returns the staged first octets of the current ULPDU: at
// NeedPlace min(ULPDULen, HeaderPeek) octets, and after Stage(extra) that
// many more (up to ULPDULen). It stays valid, and unchanged, until Next.
func (d *Decoder) Header() []byte { return d.hdr }

// Mid reports whether the stream is inside an FPDU: some octet after the
// last complete FPDU was received. An end of the stream now is a
// truncation (ErrTruncated, LLP/0/0x01); otherwise it is a clean end
// (io.EOF).
func (d *Decoder) Mid() bool { return d.in != d.boundary }

// PayloadLeft returns how many octets of the current ULPDU, after Header,
// are still to be delivered to the destination given to Place (or
// discarded): 0 before Place, once only PAD and CRC remain, and between
// FPDUs. A caller that pins the destination for each read (the receive
// path of the protocol core) needs no pin once it is 0.
func (d *Decoder) PayloadLeft() int { return d.rem }

// Stage asks for extra further ULPDU octets to be staged into Header(),
// beyond those it holds (extra >= 0, clamped to what the ULPDU has): Step
// is NeedBytes until they arrived, then NeedPlace again with a longer
// Header. A caller that needs an RDMAP header after the DDP header calls
// it once or twice. It may be called only at NeedPlace.
func (d *Decoder) Stage(extra int) {
	if d.err != nil {
		return
	}
	if d.ph != dPlace || extra < 0 {
		panic("fpdu: Decoder.Stage called outside NeedPlace or with a negative count")
	}
	d.target = len(d.hdr) + min(extra, d.ulen-len(d.hdr))
	d.ph = dHdr
	d.run()
	d.settle()
}

// Place is called once per FPDU at NeedPlace: the rest of the ULPDU
// (ULPDULen - len(Header())) octets goes into dst, whose length must equal
// it, or is discarded (still checked by the CRC) when dst is nil. Octets
// already staged are copied into dst at once; Buf then hands out the rest
// of dst. dst is not used after Next.
func (d *Decoder) Place(dst []byte) {
	if dst == nil {
		d.place(nil, true)
		return
	}
	d.one[0] = dst
	d.place(d.one[:], false)
}

// PlaceV is Place with a scatter list: the rest of the ULPDU goes into the
// pieces of dsts in order (a receive buffer or a Read sink of several
// SGEs), whose lengths must add up to ULPDULen - len(Header()); empty
// pieces are skipped. dsts itself is kept, not copied, until Next.
func (d *Decoder) PlaceV(dsts [][]byte) {
	d.place(dsts, false)
}

func (d *Decoder) place(dsts [][]byte, discard bool) {
	if d.err != nil {
		return
	}
	rest := d.ulen - len(d.hdr)
	total := 0
	for _, b := range dsts {
		total += len(b)
	}
	if d.ph != dPlace || !discard && total != rest {
		panic("fpdu: Decoder.Place called outside NeedPlace or with a destination of the wrong length")
	}
	d.dsts, d.discard, d.di, d.placed, d.rem = dsts, discard, 0, 0, rest
	d.ph = dBody
	d.run()
	d.settle()
}

// Next moves past FPDUDone to the next FPDU; the caller calls it after
// handling FPDUDone. Header and the destination given to Place are no
// longer used. After an error it does nothing.
func (d *Decoder) Next() {
	if d.err != nil {
		return
	}
	if d.ph != dDone {
		panic("fpdu: Decoder.Next called before FPDUDone")
	}
	d.ph = dLen
	d.ulen, d.target = 0, 0
	d.hdr = d.hdr[:0]
	d.one[0] = nil
	d.dsts, d.discard, d.di, d.placed, d.rem = nil, false, 0, 0, 0
	d.crc = 0
	d.crcFrom = d.st.r
	d.m.startFPDU()
	d.run()
	d.settle()
}

// Buf returns where the next stream octets go when Step is NeedBytes
// (otherwise nil): a slice of the Decoder's staging buffer, or, after
// Place with a destination, the next part of that destination, which
// stops before the next marker (markers go to the staging buffer) and at
// the end of a PlaceV piece. Its length is at least 1 at NeedBytes. It
// stays valid until Advance.
func (d *Decoder) Buf() []byte {
	d.vdst, d.extra = 0, 0
	return d.buf()
}

func (d *Decoder) buf() []byte {
	if d.Step() != NeedBytes {
		return nil
	}
	if b := d.dstPiece(); b != nil {
		return b
	}
	d.st.take()
	return d.st.buf[d.st.w:d.stageLimit()]
}

// Bufs appends to iov where the next stream octets go, for a vectored
// read (readv): Buf(), and when Buf() is part of a destination, the
// following pieces of a PlaceV destination up to the next marker, then the
// staging buffer for the octets that follow (a marker, or the FPDU's
// trailer and the next FPDUs), so that one read brings a large payload and
// what follows it. Advance(n) then counts the octets written across them,
// in order. At other steps it appends nothing.
func (d *Decoder) Bufs(iov [][]byte) [][]byte {
	d.vdst, d.extra = 0, 0
	b := d.buf()
	if b == nil {
		return iov
	}
	iov = append(iov, b)
	if d.dstPiece() == nil {
		return iov
	}
	// b is part of the destination: further pieces as far as the next
	// marker, then the staging buffer, for the rest of the ULPDU when a
	// marker cuts it, the trailer, and what follows: after a large FPDU
	// only the next FPDU's first octets (as in stageLimit), else as many
	// FPDUs as come.
	vdst := len(b)
	room := uint64(math.MaxInt)
	if d.m.on {
		room = d.m.room()
	}
	for i := d.di + 1; i < len(d.dsts) && uint64(vdst) < room; i++ {
		p := d.dsts[i][:min(uint64(len(d.dsts[i])), room-uint64(vdst))]
		if len(p) > 0 {
			iov = append(iov, p)
			vdst += len(p)
		}
	}
	d.st.take()
	end := len(d.st.buf)
	if d.large {
		after := d.rem - vdst
		end = min(end, d.st.w+after+MarkerLen*(after/(MarkerInterval-MarkerLen)+2)+CRCLen+4+lookahead)
	}
	s := d.st.buf[d.st.w:end]
	d.vdst, d.extra = vdst, len(s)
	return append(iov, s)
}

// Advance consumes n octets just written into Buf() (0 <= n <=
// len(Buf())), or across the slices of Bufs, and processes as much of the
// stream as it can: Step then says what is needed next.
func (d *Decoder) Advance(n int) {
	if n < 0 || n > 0 && d.Step() != NeedBytes {
		panic("fpdu: Decoder.Advance without octets asked for")
	}
	vdst, extra := d.vdst, d.extra
	d.vdst, d.extra = 0, 0
	if n > 0 {
		if b := d.dstPiece(); b != nil {
			k := min(n, max(len(b), vdst))
			if n-k > extra {
				panic("fpdu: Decoder.Advance beyond the slices handed out")
			}
			d.fold()
			d.in += uint64(k)
			n -= k
			for k > 0 {
				o := d.out()
				c := min(k, len(o))
				if d.crcOn {
					d.crc = UpdateCRC32c(d.crc, o[:c])
				}
				d.placed += c
				d.rem -= c
				d.m.pos += uint64(c)
				k -= c
			}
		} else if n > d.stageLimit()-d.st.w || d.st.p == nil {
			panic("fpdu: Decoder.Advance beyond Buf")
		}
		d.st.w += n
		d.in += uint64(n)
		d.run()
	}
	d.settle()
}

// out returns the unfilled part of the destination piece being filled,
// moving past full and empty pieces (nil when there is none).
func (d *Decoder) out() []byte {
	for d.di < len(d.dsts) && d.placed == len(d.dsts[d.di]) {
		d.di++
		d.placed = 0
	}
	if d.di == len(d.dsts) {
		return nil
	}
	return d.dsts[d.di][d.placed:]
}

// dstPiece returns the part of the destination the next octets go to: at
// NeedBytes with a destination and no marker due, the rest of the current
// piece up to the next marker. Otherwise nil.
func (d *Decoder) dstPiece() []byte {
	if d.err != nil || d.ph != dBody || d.discard || d.rem == 0 || d.m.due() {
		return nil
	}
	o := d.out()
	return o[:d.m.clamp(len(o))]
}

// stageLimit returns the end of the staging buffer Buf hands out: all of
// it, except after a large FPDU, when it asks only for what the current
// FPDU still needs and a little more, so that the next large payload is
// left for a read straight into its destination (as the Reader does).
func (d *Decoder) stageLimit() int {
	limit := len(d.st.buf)
	if d.large {
		need := MarkerLen + CRCLen + 4 // PAD, a marker, the CRC, slack
		switch d.ph {
		case dHdr:
			need += d.target - len(d.hdr)
		case dBody:
			need += d.rem
		}
		limit = min(limit, d.st.w+need+lookahead)
	}
	return limit
}
