package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// SGE is one element of a scatter/gather list: Length bytes at byte Offset
// of the local registered region whose STag is STag (the "lkey" of verbs).
// The queue pair resolves the STag when the work request is posted: the
// region must then be valid, of the QP's protection domain, and cover the
// bytes.
type SGE struct {
	STag   uint32
	Offset uint64
	Length uint32
}

// SendWR is a send-queue work request. Until it completes (or, with Inline,
// until the post returns), the memory its SGL names belongs to the QP: the
// caller must not write (Send, Write) or read (Read) it.
type SendWR struct {
	// ID is returned in the completion.
	ID    uint64
	Op    Opcode
	Flags SendFlags
	// SGL is the local memory: the payload of a Send or Write, the sink of
	// a Read (a single SGE for an RFC 5040 Read), the buffer of at least 8
	// bytes that receives an atomic's original value (host byte order), or
	// nothing.
	SGL []SGE
	// Remote is the peer's memory for Write, Read, Read V2 and the atomics
	// (its Len is not used: the SGL's total length is the size; an atomic
	// names 8 aligned bytes).
	Remote RemoteBuffer
	// InvalidateSTag is the peer STag a Send with Invalidate invalidates, or
	// the local STag (of a region or a type 2 memory window) an
	// OpLocalInvalidate invalidates.
	InvalidateSTag uint32
	// Window and Access are OpBindWindow's: the STag of the memory window
	// to bind, and the rights it grants through it.
	Window uint32
	Access Access
	// Immediate is the 8 bytes of OpImmediate and of WithImmediate (sent
	// big-endian).
	Immediate uint64
	// Atomic operands (RFC 7306 §5.1): OpFetchAdd adds Add under AddMask
	// (per field; 0 means a plain 64-bit add); OpCompareSwap compares
	// Compare under CompareMask and swaps in Swap under SwapMask (a plain
	// compare-and-swap uses all-ones masks).
	Add, AddMask                         uint64
	Compare, CompareMask, Swap, SwapMask uint64
}

// RecvWR is a receive-queue work request: where the next Send lands.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// Completion reports a finished work request.
type Completion struct {
	ID uint64
	// QPNum is the number of the QP the work request was posted to.
	QPNum  uint32
	Status Status
	Op     Opcode
	// Len is the number of bytes received (OpRecv) or transferred (8 for
	// an atomic).
	Len int
	// Solicited: the received message asked for a solicited event.
	Solicited bool
	// Invalidated is the local STag a received Send with Invalidate
	// invalidated, or 0.
	Invalidated uint32
	// HasImmediate: the receive completed Immediate Data (RFC 7306) or a
	// Send with Immediate, whose 8 bytes are Immediate. For Immediate Data
	// alone, Len is 8 when they were also placed in the receive buffer (one
	// of at least 8 bytes), 0 otherwise.
	HasImmediate bool
	Immediate    uint64
	// Original is the value an atomic found at its target.
	Original uint64
	// Err says why, for a status other than StatusSuccess: a Terminate
	// error, the QP's error for StatusFlushed, a local error, etc.
	Err error
}

// RemoteBuffer names a peer's registered memory: what a peer advertises so
// that one-sided operations can target it.
type RemoteBuffer struct {
	STag uint32
	TO   uint64
	Len  uint32
}

// RemoteBufferLen is the length of a RemoteBuffer's binary encoding.
const RemoteBufferLen = 16

// ErrRange: an offset and length outside the buffer or region.
var ErrRange = errors.New("iwarp: offset and length outside the memory region")

// AppendBinary appends the 16-byte encoding: TO, STag and length,
// big-endian (the layout rping's buffer advertisements use).
func (b RemoteBuffer) AppendBinary(dst []byte) ([]byte, error) {
	dst = binary.BigEndian.AppendUint64(dst, b.TO)
	dst = binary.BigEndian.AppendUint32(dst, b.STag)
	return binary.BigEndian.AppendUint32(dst, b.Len), nil
}

// MarshalBinary returns the 16-byte encoding.
func (b RemoteBuffer) MarshalBinary() ([]byte, error) {
	return b.AppendBinary(make([]byte, 0, RemoteBufferLen))
}

// UnmarshalBinary decodes the 16-byte encoding.
func (b *RemoteBuffer) UnmarshalBinary(p []byte) error {
	if len(p) != RemoteBufferLen {
		return fmt.Errorf("iwarp: remote buffer encoding is %d bytes, want %d", len(p), RemoteBufferLen)
	}
	b.TO = binary.BigEndian.Uint64(p)
	b.STag = binary.BigEndian.Uint32(p[8:])
	b.Len = binary.BigEndian.Uint32(p[12:])
	return nil
}

// Slice returns n bytes at offset off of b, or ErrRange.
func (b RemoteBuffer) Slice(off, n uint32) (RemoteBuffer, error) {
	if off > b.Len || b.Len-off < n {
		return RemoteBuffer{}, ErrRange
	}
	return RemoteBuffer{STag: b.STag, TO: b.TO + uint64(off), Len: n}, nil
}
