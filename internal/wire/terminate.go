package wire

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/rdma"
)

// Lengths of the Terminate header's parts (RFC 5040 §4.8).
const (
	// TermControlLen is the Terminate Control field: Layer, Error Type,
	// Error Code, M, D, R and reserved bits.
	TermControlLen = 4
	// TermSegLenLen is the DDP Segment Length field that follows it when
	// headers are attached.
	TermSegLenLen = 2
	// TermRDMAHeaderLen is the length of an attached RDMA header: the
	// terminated Read Request's header (RFC 5040 §4.8).
	TermRDMAHeaderLen = ReadRequestLen
)

// Terminate is the RDMAP Terminate header (RFC 5040 §4.8): everything after
// the untagged DDP header of a Terminate message (QN 2, one segment, L=1).
//
// Layout on the wire: the 4-byte Terminate Control field, then - when any
// header is attached - the 2-byte DDP Segment Length, the terminated
// segment's DDP header (14 bytes if its T bit is set, else 18) and possibly
// the terminated message's 28-byte RDMA header.
type Terminate struct {
	// Code is the Layer, Error Type and Error Code.
	Code rdma.TermCode
	// M: the DDP Segment Length field is valid.
	M bool
	// D: the terminated DDP header is included.
	D bool
	// R: the terminated RDMA header is included.
	R bool
	// SegLenPresent says whether the DDP Segment Length field is in the
	// message. ParseTerminate sets it from the message length;
	// AppendTerminate writes the field when it is set or a header is
	// attached.
	SegLenPresent bool
	// DDPSegLen is the DDP Segment Length of the terminated segment (siw
	// puts its payload length there, sometimes 0).
	DDPSegLen uint16
	// DDPHeader is the terminated segment's DDP header (14 or 18 bytes), a
	// view into the parsed message, or empty.
	DDPHeader []byte
	// RDMAHeader is the terminated message's RDMA header (28 bytes), a
	// view into the parsed message, or empty.
	RDMAHeader []byte
	// Layout is how the received Terminate Control field was encoded;
	// AppendTerminate always uses LayoutRFC.
	Layout TermLayout
	// Control is the Terminate Control field exactly as received.
	Control [TermControlLen]byte
	// Ambiguous says the control field reads as a valid code in both
	// layouts, with different meanings; Layout is the likelier one (see
	// decodeTermControl) and DecodeTermControl gives the other.
	Ambiguous bool
}

// Errors of Terminate parsing. A malformed Terminate is itself not answered
// with a Terminate; the codes (RDMAP/2/0xFF) only classify it.
var (
	// ErrShortTerminate: fewer than 4 bytes after the untagged DDP header.
	ErrShortTerminate = &ProtocolError{"Terminate shorter than its control field", rdma.TermRDMAPOpUnspecified}
	// ErrTerminateHeaders: the bytes after the Terminate Control field
	// are not a DDP Segment Length, a whole DDP header and optionally a
	// whole 28-byte RDMA header.
	ErrTerminateHeaders = &ProtocolError{"Terminate's attached headers do not fit its length", rdma.TermRDMAPOpUnspecified}
)

// ParseTerminate decodes the Terminate header b, which must run to the end
// of the ULPDU: what is attached is found from len(b), not from the M, D
// and R flags alone, because siw sets R without attaching an RDMA header.
// It accepts both the RFC layout of the control field and Linux siw's (see
// TermLayout and decodeTermControl for the heuristic).
//
// When the control field is there but the rest is malformed, it returns
// ErrTerminateHeaders with Code, the flags, Layout and Control filled in, so
// that the receiver can still report the peer's error.
func ParseTerminate(b []byte) (Terminate, error) {
	var t Terminate
	if len(b) < TermControlLen {
		return t, ErrShortTerminate
	}
	copy(t.Control[:], b)
	rd, layout, ambiguous := decodeTermControl(t.Control)
	t.Code, t.M, t.D, t.R = rd.Code, rd.M, rd.D, rd.R
	t.Layout, t.Ambiguous = layout, ambiguous
	rest := b[TermControlLen:]
	if len(rest) == 0 {
		return t, nil
	}
	if len(rest) < TermSegLenLen {
		return t, ErrTerminateHeaders
	}
	t.SegLenPresent = true
	t.DDPSegLen = binary.BigEndian.Uint16(rest)
	rest = rest[TermSegLenLen:]
	if len(rest) == 0 {
		return t, nil
	}
	n := UntaggedHdrLen
	if rest[0]&DDPTagged != 0 {
		n = TaggedHdrLen
	}
	switch len(rest) {
	case n:
		t.DDPHeader = rest[:n:n]
	case n + TermRDMAHeaderLen:
		t.DDPHeader = rest[:n:n]
		t.RDMAHeader = rest[n:len(rest):len(rest)]
	default:
		return t, ErrTerminateHeaders
	}
	return t, nil
}

// AppendTerminate appends t's Terminate header to dst in the RFC 5040 §4.8
// layout: the control field from Code and the flags (reserved bits zero),
// then the DDP Segment Length if t.SegLenPresent or a header is attached,
// then DDPHeader and RDMAHeader as given.
func AppendTerminate(dst []byte, t *Terminate) []byte {
	var flags byte
	if t.M {
		flags |= termRFCM
	}
	if t.D {
		flags |= termRFCD
	}
	if t.R {
		flags |= termRFCR
	}
	dst = append(dst, byte(t.Code>>8), byte(t.Code), flags, 0)
	if t.SegLenPresent || len(t.DDPHeader) > 0 || len(t.RDMAHeader) > 0 {
		dst = binary.BigEndian.AppendUint16(dst, t.DDPSegLen)
	}
	dst = append(dst, t.DDPHeader...)
	return append(dst, t.RDMAHeader...)
}

// Len returns the length of t's encoding by AppendTerminate.
func (t *Terminate) Len() int {
	n := TermControlLen
	if t.SegLenPresent || len(t.DDPHeader) > 0 || len(t.RDMAHeader) > 0 {
		n += TermSegLenLen
	}
	return n + len(t.DDPHeader) + len(t.RDMAHeader)
}
