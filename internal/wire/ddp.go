package wire

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/rdma"
)

// DDP control field bits (RFC 5041 §5.1), byte 0 of every DDP header.
const (
	DDPTagged    = 0x80 // T: tagged buffer model
	DDPLast      = 0x40 // L: last segment of the message
	DDPRsvdMask  = 0x3C // reserved, zero on send, ignored on receive
	DDPVerMask   = 0x03 // DV: DDP version
	DDPVersion   = 1    // the only DDP version (RFC 5041)
	TaggedHdrLen = 14   // DDP tagged header length (RFC 5041 §5.2)
	// UntaggedHdrLen is the DDP untagged header length (RFC 5041 §5.3).
	UntaggedHdrLen = 18
)

// The RDMAP queue numbers of the untagged model (RFC 5040 §5.1, RFC 7306 §8).
const (
	QNSend      = 0 // Send, Immediate Data, Send with Immediate (V2)
	QNReadReq   = 1 // Read Request, Atomic Request, Read V2 Request
	QNTerminate = 2 // Terminate
	QNResponse  = 3 // Atomic Response, Read V2 Response (RFC 7306, V2)
)

// DDPHeader is a decoded DDP header, tagged or untagged (RFC 5041 §5).
// The RDMAP control field (byte 1) is kept as RDMAPControl.
type DDPHeader struct {
	Tagged  bool
	Last    bool
	Version uint8 // DV, 1 on send
	Control RDMAPControl

	// Tagged model.
	STag uint32
	TO   uint64

	// Untagged model.
	InvSTag uint32 // the ULP field: RDMAP's Invalidate STag, else zero
	QN      uint32
	MSN     uint32
	MO      uint32
}

// Len returns the encoded header length: TaggedHdrLen or UntaggedHdrLen.
func (h *DDPHeader) Len() int {
	if h.Tagged {
		return TaggedHdrLen
	}
	return UntaggedHdrLen
}

// AppendDDPHeader appends h's encoding to dst. The reserved bits are zero;
// DV is h.Version.
func AppendDDPHeader(dst []byte, h *DDPHeader) []byte {
	c := h.Version & DDPVerMask
	if h.Tagged {
		c |= DDPTagged
	}
	if h.Last {
		c |= DDPLast
	}
	dst = append(dst, c, byte(h.Control))
	if h.Tagged {
		dst = binary.BigEndian.AppendUint32(dst, h.STag)
		return binary.BigEndian.AppendUint64(dst, h.TO)
	}
	dst = binary.BigEndian.AppendUint32(dst, h.InvSTag)
	dst = binary.BigEndian.AppendUint32(dst, h.QN)
	dst = binary.BigEndian.AppendUint32(dst, h.MSN)
	return binary.BigEndian.AppendUint32(dst, h.MO)
}

// ParseDDPHeader decodes the DDP header at the start of a ULPDU and returns it
// with its length. It checks only that the bytes are there; the DDP version
// and everything else are the receiver's to validate (see CheckDDPVersion),
// because which Terminate a bad field earns depends on the receiver's state.
func ParseDDPHeader(b []byte) (h DDPHeader, n int, err error) {
	if len(b) < 2 {
		return h, 0, ErrShortDDPHeader
	}
	c := b[0]
	h.Tagged = c&DDPTagged != 0
	h.Last = c&DDPLast != 0
	h.Version = c & DDPVerMask
	h.Control = RDMAPControl(b[1])
	if h.Tagged {
		if len(b) < TaggedHdrLen {
			return h, 0, ErrShortDDPHeader
		}
		h.STag = binary.BigEndian.Uint32(b[2:])
		h.TO = binary.BigEndian.Uint64(b[6:])
		return h, TaggedHdrLen, nil
	}
	if len(b) < UntaggedHdrLen {
		return h, 0, ErrShortDDPHeader
	}
	h.InvSTag = binary.BigEndian.Uint32(b[2:])
	h.QN = binary.BigEndian.Uint32(b[6:])
	h.MSN = binary.BigEndian.Uint32(b[10:])
	h.MO = binary.BigEndian.Uint32(b[14:])
	return h, UntaggedHdrLen, nil
}

// CheckDDPVersion returns ErrDDPTaggedVersion or ErrDDPUntaggedVersion if
// the header's DV is not 1 (RFC 5041 §7.2), nil otherwise.
func (h *DDPHeader) CheckDDPVersion() error {
	if h.Version == DDPVersion {
		return nil
	}
	if h.Tagged {
		return ErrDDPTaggedVersion
	}
	return ErrDDPUntaggedVersion
}

// Errors of DDP header parsing and validation.
var (
	ErrShortDDPHeader     = &ProtocolError{"ULPDU shorter than its DDP header", rdma.TermDDPCatastrophic}
	ErrDDPTaggedVersion   = &ProtocolError{"invalid DDP version in a tagged segment", rdma.TermDDPTaggedVersion}
	ErrDDPUntaggedVersion = &ProtocolError{"invalid DDP version in an untagged segment", rdma.TermDDPUntaggedVersion}
)
