package mpa

import "encoding/binary"

// The MPA startup frame header (RFC 5044 §7.1, RFC 6581 §5): a 16-byte key,
// a flags byte, Rev and the 16-bit PD_Length, then the private data.
const (
	// HeaderLen is the length of a Request or Reply frame without its
	// private data.
	HeaderLen = 20
	// MaxPrivateData is the most private data RFC 5044 §7.1 allows.
	MaxPrivateData = 512
	// InteropPrivateData is the most private data Linux siw and Chelsio
	// accept, the 4-byte IRD/ORD block included (docs/spec/mpa.md §1).
	InteropPrivateData = 256

	// RequestKey is the key of an MPA Request Frame.
	RequestKey = "MPA ID Req Frame"
	// ReplyKey is the key of an MPA Reply Frame.
	ReplyKey = "MPA ID Rep Frame"

	keyLen = 16
)

// MPA revisions (the Rev field).
const (
	Rev1 = 1 // RFC 5044
	Rev2 = 2 // RFC 6581 enhanced connection establishment
)

// Flags is the flags byte of a Request or Reply (RFC 5044 §7.1, RFC 6581
// §5): M, C, R, H and the reserved nibble, whose two low bits the project
// uses for its extension set (docs/spec/extensions.md §3).
type Flags uint8

// The flag bits.
const (
	FlagMarkers  Flags = 0x80 // M: send me markers
	FlagCRC      Flags = 0x40 // C: use CRC
	FlagReject   Flags = 0x20 // R: reject (Reply only)
	FlagEnhanced Flags = 0x10 // H: RFC 6581 IRD/ORD block leads the private data (Rev 2)
	FlagResMask  Flags = 0x0F // Res: zero on send, ignored on receive (except Ext bits)
	// FlagEchoProbe is a reserved bit an Initiator that advertises
	// extensions also sets, and that no Responder following the project's
	// negotiation ever sets in its Reply. Linux siw builds its Reply from
	// the Request's header and so echoes every reserved bit: a Reply that
	// carries the probe comes from such a Responder, and its extension bits
	// prove nothing (docs/mpa.md, decision 18). siw's own meaning of 0x08
	// (GSO_EXP, "the peer accepts FPDUs not aligned to TCP segments") is
	// true of this stack, so a siw built with try_gso reads it correctly.
	FlagEchoProbe Flags = 0x08
)

// Ext returns the raw extension bits of the reserved nibble, not normalized.
func (f Flags) Ext() Ext { return Ext(f) & ExtAll }

// Frame is a decoded MPA Request or Reply. PrivateData is a view into the
// parsed bytes: it is valid only as long as they are.
type Frame struct {
	Reply       bool  // the key was ReplyKey (else RequestKey)
	Flags       Flags // M, C, R, H, Res
	Rev         uint8 // 1 or 2
	PrivateData []byte
}

// Enhanced reports whether the frame carries the RFC 6581 IRD/ORD block:
// Rev 2 with H set. H is a reserved bit under Rev 1.
func (f *Frame) Enhanced() bool { return f.Rev == Rev2 && f.Flags&FlagEnhanced != 0 }

// IRDORD returns the RFC 6581 block of an enhanced frame; ok is false for a
// frame without one. A frame from ParseFrame always holds a complete block
// when Enhanced is true.
func (f *Frame) IRDORD() (b IRDORD, ok bool) {
	if !f.Enhanced() {
		return b, false
	}
	b, err := ParseIRDORD(f.PrivateData)
	return b, err == nil
}

// ULPData returns the private data meant for the ULP: the private data
// after the IRD/ORD block of an enhanced frame, all of it otherwise.
func (f *Frame) ULPData() []byte {
	if f.Enhanced() && len(f.PrivateData) >= IRDORDLen {
		return f.PrivateData[IRDORDLen:]
	}
	return f.PrivateData
}

// Len returns the encoded length of f.
func (f *Frame) Len() int { return HeaderLen + len(f.PrivateData) }

// AppendFrame appends f's encoding to dst. The caller keeps
// len(f.PrivateData) at most MaxPrivateData; the flags are written as given.
func AppendFrame(dst []byte, f *Frame) []byte {
	if f.Reply {
		dst = append(dst, ReplyKey...)
	} else {
		dst = append(dst, RequestKey...)
	}
	dst = append(dst, byte(f.Flags), f.Rev)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(f.PrivateData)))
	return append(dst, f.PrivateData...)
}

// ParseFrame decodes the Request or Reply at the start of b and returns it
// with the number of bytes it used. maxPD is the receiver's private data
// limit: values <= 0 or above MaxPrivateData mean MaxPrivateData.
//
// It checks the key, Rev (1 or 2), PD_Length against the limit, that b holds
// the whole frame (else ErrShortFrame), and that an enhanced frame's private
// data holds the IRD/ORD block. Bytes after the frame are not examined.
func ParseFrame(b []byte, maxPD int) (f Frame, n int, err error) {
	pdLen, err := parseHeader(b, maxPD)
	if err != nil {
		return Frame{}, 0, err
	}
	n = HeaderLen + pdLen
	if len(b) < n {
		return Frame{}, 0, ErrShortFrame
	}
	f = Frame{
		Reply:       string(b[:keyLen]) == ReplyKey,
		Flags:       Flags(b[16]),
		Rev:         b[17],
		PrivateData: b[HeaderLen:n:n],
	}
	return f, n, nil
}

// parseHeader validates the 20-byte header at the start of b and returns
// PD_Length. It lets a stream reader learn how many private data bytes to
// read before it has them.
func parseHeader(b []byte, maxPD int) (pdLen int, err error) {
	if len(b) < HeaderLen {
		return 0, ErrShortFrame
	}
	if k := string(b[:keyLen]); k != RequestKey && k != ReplyKey {
		return 0, ErrBadKey
	}
	rev := b[17]
	if rev != Rev1 && rev != Rev2 {
		return 0, ErrUnknownRev
	}
	pdLen = int(binary.BigEndian.Uint16(b[18:]))
	if pdLen > limitPD(maxPD) {
		return 0, ErrPrivateDataTooLong
	}
	if rev == Rev2 && Flags(b[16])&FlagEnhanced != 0 && pdLen < IRDORDLen {
		return 0, ErrShortIRDORD
	}
	return pdLen, nil
}

// limitPD turns a configured private data limit into an effective one.
func limitPD(maxPD int) int {
	if maxPD <= 0 || maxPD > MaxPrivateData {
		return MaxPrivateData
	}
	return maxPD
}
