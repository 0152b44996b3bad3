package wire

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/rdma"
)

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
	// bits reserved. See docs/spec/interop.md.
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
	termRFCM     = 0x80
	termRFCD     = 0x40
	termRFCR     = 0x20
	termRFCRsvd2 = 0x1F // reserved bits of byte 2 in the RFC layout
	termSiwM     = 0x01
	termSiwD     = 0x02
	termSiwR     = 0x04
	termSiwRsvd2 = 0xF8 // reserved bits of byte 2 in siw's layout
)

// TermControl is one reading of the 4-byte Terminate Control field.
type TermControl struct {
	Code rdma.TermCode
	// M, D, R are the flags: DDP Segment Length valid, DDP header
	// included, RDMA header included.
	M, D, R bool
	// Reserved says some bit reserved in this layout is set.
	Reserved bool
}

// clean reports whether the reading is a code of the specification tables
// with no reserved bit set.
func (c TermControl) clean() bool { return c.Code.Known() && !c.Reserved }

// DecodeTermControl reads the Terminate Control field c in layout l. It is
// for tools that show both readings of an ambiguous field; ParseTerminate
// picks the layout itself.
func DecodeTermControl(c [TermControlLen]byte, l TermLayout) TermControl {
	if l == LayoutSiw {
		return TermControl{
			Code:     rdma.MakeTermCode(rdma.TermLayer(c[0]&0x0F), c[0]>>4, c[1]),
			M:        c[2]&termSiwM != 0,
			D:        c[2]&termSiwD != 0,
			R:        c[2]&termSiwR != 0,
			Reserved: c[2]&termSiwRsvd2 != 0 || c[3] != 0,
		}
	}
	return TermControl{
		Code:     rdma.TermCode(binary.BigEndian.Uint16(c[:2])),
		M:        c[2]&termRFCM != 0,
		D:        c[2]&termRFCD != 0,
		R:        c[2]&termRFCR != 0,
		Reserved: c[2]&termRFCRsvd2 != 0 || c[3] != 0,
	}
}

// siwSendsBare reports whether Linux siw sends code with no flag set and
// nothing attached (siw_send_terminate: RDMAP local catastrophic, invalid
// RDMAP version, unexpected opcode, invalid DDP version, and the LLP codes
// it generates: CRC, FPDU start, bad MPA frame, IRD, RTR).
func siwSendsBare(c rdma.TermCode) bool {
	switch c.Layer() {
	case rdma.LayerRDMAP:
		return c.Type() == rdma.TypeCatastrophic || c == rdma.TermRDMAPInvalidVersion || c == rdma.TermRDMAPUnexpectedOpcode
	case rdma.LayerDDP:
		return c == rdma.TermDDPTaggedVersion || c == rdma.TermDDPUntaggedVersion
	case rdma.LayerLLP:
		switch c {
		case rdma.TermLLPCRC, rdma.TermLLPMarker, rdma.TermLLPInvalidFrame, rdma.TermLLPInsufficientIRD, rdma.TermLLPNoRTRModel:
			return true
		}
	}
	return false
}

// decodeTermControl reads the 4 Terminate Control bytes c in whichever
// layout makes sense. A reading is clean when its code is one of the
// specification tables (rdma.TermCode.Known: layer 0-2, an error type of that
// layer, a listed code) and it sets no bit reserved in its layout. The
// heuristic, in order:
//
//  1. one reading clean, the other not: the clean one. So `02 02 00 00`
//     (RFC: RDMAP/2/0x02, no such code) is siw's LLP/0/0x02, `21 06 00 00`
//     (RFC: layer 2 with type 1, impossible) is siw's DDP/2/0x06, and
//     `10 00 07 00` (RFC: DDP/0/0x00 with reserved low bits set and the
//     flag bits clear) is siw's RDMAP/1/0x00 with M, D and R.
//  2. both clean: then no flag is set at all (each layout's flag bits are
//     reserved in the other). The same code either way: RFC. Different
//     codes (only when byte 0 is 0x01, 0x10, 0x02 or 0x20): siw's reading
//     if it is a code siw sends bare (siwSendsBare), else the RFC reading;
//     either way the result is marked ambiguous. So `02 07 00 00` is
//     siw's LLP/0/0x07 (captured from siw; RFC would be RDMAP/2/0x07),
//     `20 05 00 00` is siw's RDMAP/2/0x05 (its answer to an RV=2 frame;
//     RFC would be LLP/0/0x05), `02 05 00 00` is RFC RDMAP/2/0x05.
//  3. neither clean: the reading whose code is known, RFC first; with no
//     known code, the RFC reading.
//
// The RFC-layout encoding of a decoded result reads back the same code
// unless that encoding is itself ambiguous: senders that want to be read
// unambiguously attach the DDP header (M, D) to RDMAP remote-operation
// Terminates.
func decodeTermControl(c [TermControlLen]byte) (TermControl, TermLayout, bool) {
	rfc := DecodeTermControl(c, LayoutRFC)
	siw := DecodeTermControl(c, LayoutSiw)
	switch {
	case rfc.clean() && siw.clean():
		if rfc.Code == siw.Code {
			return rfc, LayoutRFC, false
		}
		if siwSendsBare(siw.Code) {
			return siw, LayoutSiw, true
		}
		return rfc, LayoutRFC, true
	case rfc.clean():
		return rfc, LayoutRFC, false
	case siw.clean():
		return siw, LayoutSiw, false
	case rfc.Code.Known():
		return rfc, LayoutRFC, false
	case siw.Code.Known():
		return siw, LayoutSiw, false
	}
	return rfc, LayoutRFC, false
}
