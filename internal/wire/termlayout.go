package wire

// TermLayout says how a received Terminate Control field was encoded.
type TermLayout uint8

// The Terminate Control layouts seen on the wire.
const (
	// LayoutRFC is RFC 5040 §4.8: Layer in the high nibble of byte 0,
	// Error Type in the low nibble, Error Code in byte 1, then M 0x80,
	// D 0x40, R 0x20 in byte 2 and 13 reserved bits.
	LayoutRFC TermLayout = iota
	// LayoutSiw is Linux siw's (C bitfields laid out little-endian):
	// Error Type in the high nibble of byte 0, Layer in the low nibble,
	// Error Code in byte 1, M 0x01, D 0x02, R 0x04 in byte 2, the other
	// bits reserved. See shared/spec/interop.md.
	LayoutSiw
)

// String returns "RFC" or "siw".
func (l TermLayout) String() string {
	if l == LayoutSiw {
		return "siw"
	}
	return "RFC"
}

// Bits of the Terminate Control field's third and fourth bytes.
const (
	termRFCM        = 0x80
	termRFCD        = 0x40
	termRFCR        = 0x20
	termRFCRsvd2    = 0x1F // reserved bits of byte 2 in the RFC layout
	termSiwM        = 0x01
	termSiwD        = 0x02
	termSiwR        = 0x04
	termSiwRsvd2    = 0xF8 // reserved bits of byte 2 in siw's layout
	termControlSize = 4
)

// termReading is one interpretation of the 4 Terminate Control bytes.
type termReading struct {
	code    TermCode
	m, d, r bool
	rsvd    bool // some reserved bit is set
}

func readTermRFC(c []byte) termReading {
	return termReading{
		code: TermCode{Layer(c[0] >> 4), ErrorType(c[0] & 0x0F), c[1]},
		m:    c[2]&termRFCM != 0,
		d:    c[2]&termRFCD != 0,
		r:    c[2]&termRFCR != 0,
		rsvd: c[2]&termRFCRsvd2 != 0 || c[3] != 0,
	}
}

func readTermSiw(c []byte) termReading {
	return termReading{
		code: TermCode{Layer(c[0] & 0x0F), ErrorType(c[0] >> 4), c[1]},
		m:    c[2]&termSiwM != 0,
		d:    c[2]&termSiwD != 0,
		r:    c[2]&termSiwR != 0,
		rsvd: c[2]&termSiwRsvd2 != 0 || c[3] != 0,
	}
}

// decodeTermControl reads the 4 Terminate Control bytes c in whichever
// layout makes sense. The heuristic, in order:
//
//  1. the RFC reading if its code is one of the specification tables
//     (TermCode.Known: layer 0-2, an error type of that layer, a listed
//     code) and no reserved bit is set;
//  2. else siw's reading under the same condition;
//  3. else the RFC reading if its code is known (reserved bits set);
//  4. else siw's reading if its code is known;
//  5. else the RFC reading (an unknown code, reported as such).
//
// So `02 02 00 00` (RFC: RDMAP/2/0x02, not a code) is siw's LLP/0/0x02;
// `21 06 00 00` (RFC: layer 2 with type 1, impossible) is siw's DDP/2/0x06;
// `10 00 07 00` (RFC: DDP/0/0x00 but with reserved low bits set and the
// flag bits clear) is siw's RDMAP/1/0x00 with M, D and R. A control field
// that reads as a known code both ways with no reserved bit set (nibbles
// equal, or e.g. `10 00 00 00`) is taken as RFC: the RFC layout wins ties.
// Re-encoding any decoded result in the RFC layout reads back the same.
func decodeTermControl(c []byte) (termReading, TermLayout) {
	rfc := readTermRFC(c)
	siw := readTermSiw(c)
	switch {
	case rfc.code.Known() && !rfc.rsvd:
		return rfc, LayoutRFC
	case siw.code.Known() && !siw.rsvd:
		return siw, LayoutSiw
	case rfc.code.Known():
		return rfc, LayoutRFC
	case siw.code.Known():
		return siw, LayoutSiw
	}
	return rfc, LayoutRFC
}
