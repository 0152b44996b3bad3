package wire

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/rdma"
)

// Lengths of the RFC 7306 atomic headers that follow the untagged DDP header.
// The figures of RFC 7306 §5.2 give 52 and 12 bytes (its prose says 32 for
// the response; the figures win, as Wireshark does).
const (
	AtomicRequestLen  = 52
	AtomicResponseLen = 12
)

// aopMask selects the AOpCode in the Atomic Request's first word; the 28
// bits above it are reserved.
const aopMask = 0x0F

// AtomicRequest is the RFC 7306 Atomic Request header (§5.2.1).
type AtomicRequest struct {
	// Reserved holds the 28 reserved bits above the AOpCode, shifted down:
	// zero on send, ignored on receive, kept so a parse re-encodes exactly.
	Reserved uint32
	AOpCode  AOpCode
	// RequestID is chosen by the requester and echoed in the response.
	RequestID uint32
	STag      uint32 // Remote STag
	TO        uint64 // Remote Tagged Offset, 64-bit aligned
	// AddSwapData is the Add Data (FetchAdd) or Swap Data (CmpSwap).
	AddSwapData uint64
	// AddSwapMask is the Add Mask (FetchAdd) or Swap Mask (CmpSwap).
	AddSwapMask uint64
	// CompareData is used by CmpSwap; zero for FetchAdd.
	CompareData uint64
	// CompareMask is used by CmpSwap; all ones for FetchAdd on send,
	// ignored for FetchAdd on receive.
	CompareMask uint64
}

// ErrUnknownAOpCode reports an Atomic Request whose AOpCode is neither
// FetchAdd nor CmpSwap (project choice: RDMAP/2/0x06, unexpected opcode;
// see docs/spec/extensions.md §1).
var ErrUnknownAOpCode = &ProtocolError{"unsupported atomic operation code", rdma.TermRDMAPUnexpectedOpcode}

// ParseAtomicRequest decodes the Atomic Request header at the start of b.
// An unknown AOpCode returns ErrUnknownAOpCode together with every decoded
// field, so a decoder can still print the request. Reserved bits are
// ignored (and kept in Reserved).
func ParseAtomicRequest(b []byte) (AtomicRequest, error) {
	if len(b) < AtomicRequestLen {
		return AtomicRequest{}, ErrShortRDMAPHeader
	}
	w := binary.BigEndian.Uint32(b[0:])
	r := AtomicRequest{
		Reserved:    w >> 4,
		AOpCode:     AOpCode(w & aopMask),
		RequestID:   binary.BigEndian.Uint32(b[4:]),
		STag:        binary.BigEndian.Uint32(b[8:]),
		TO:          binary.BigEndian.Uint64(b[12:]),
		AddSwapData: binary.BigEndian.Uint64(b[20:]),
		AddSwapMask: binary.BigEndian.Uint64(b[28:]),
		CompareData: binary.BigEndian.Uint64(b[36:]),
		CompareMask: binary.BigEndian.Uint64(b[44:]),
	}
	if !r.AOpCode.Known() {
		return r, ErrUnknownAOpCode
	}
	return r, nil
}

// AppendAtomicRequest appends the 52-byte encoding of r to dst. The reserved
// bits are r.Reserved (zero unless re-encoding a parsed header).
func AppendAtomicRequest(dst []byte, r *AtomicRequest) []byte {
	dst = binary.BigEndian.AppendUint32(dst, r.Reserved<<4|uint32(r.AOpCode&aopMask))
	dst = binary.BigEndian.AppendUint32(dst, r.RequestID)
	dst = binary.BigEndian.AppendUint32(dst, r.STag)
	dst = binary.BigEndian.AppendUint64(dst, r.TO)
	dst = binary.BigEndian.AppendUint64(dst, r.AddSwapData)
	dst = binary.BigEndian.AppendUint64(dst, r.AddSwapMask)
	dst = binary.BigEndian.AppendUint64(dst, r.CompareData)
	return binary.BigEndian.AppendUint64(dst, r.CompareMask)
}

// AtomicResponse is the RFC 7306 Atomic Response header (§5.2.2).
type AtomicResponse struct {
	// RequestID is the Original Request Identifier of the answered request.
	RequestID uint32
	// OriginalValue is the 64-bit value at the target before the operation.
	OriginalValue uint64
}

// ParseAtomicResponse decodes the Atomic Response header at the start of b.
func ParseAtomicResponse(b []byte) (AtomicResponse, error) {
	if len(b) < AtomicResponseLen {
		return AtomicResponse{}, ErrShortRDMAPHeader
	}
	return AtomicResponse{
		RequestID:     binary.BigEndian.Uint32(b[0:]),
		OriginalValue: binary.BigEndian.Uint64(b[4:]),
	}, nil
}

// AppendAtomicResponse appends the 12-byte encoding of r to dst.
func AppendAtomicResponse(dst []byte, r *AtomicResponse) []byte {
	dst = binary.BigEndian.AppendUint32(dst, r.RequestID)
	return binary.BigEndian.AppendUint64(dst, r.OriginalValue)
}
