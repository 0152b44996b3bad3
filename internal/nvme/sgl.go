package nvme

import "encoding/binary"

// SGLLen is the size of an SGL descriptor.
const SGLLen = 16

// SGL is one SGL descriptor as it sits in a command's DPTR (NVMe Base 1.4
// §4.4, Figure 114-121; NVMe-oF 1.1 §2.3.2). Byte 15 is the SGL
// Identifier: the descriptor type in bits 7:4 and the subtype in bits
// 3:0. The layout of bytes 8 to 14 depends on the type: a Keyed SGL Data
// Block has a 24-bit length and a 32-bit key, the others a 32-bit length.
// SGL keeps the octets as they are, so that decoding and encoding a
// command never changes it; use the accessors and constructors to read
// and build one.
type SGL [SGLLen]byte

// SGL descriptor types (NVMe Base 1.4 Figure 115).
const (
	SGLTypeDataBlock          uint8 = 0x0 // SGL Data Block
	SGLTypeBitBucket          uint8 = 0x1 // SGL Bit Bucket
	SGLTypeSegment            uint8 = 0x2 // SGL Segment
	SGLTypeLastSegment        uint8 = 0x3 // SGL Last Segment
	SGLTypeKeyedDataBlock     uint8 = 0x4 // Keyed SGL Data Block
	SGLTypeTransportDataBlock uint8 = 0x5 // Transport SGL Data Block
)

// SGL descriptor subtypes (NVMe Base 1.4 Figure 116; NVMe-oF 1.1 §2.3.2
// and the RDMA transport's Invalidate Key, NVMe over Fabrics RDMA
// Transport 1.0 §3.4).
const (
	SGLSubAddress    uint8 = 0x0 // the address field is a memory address
	SGLSubOffset     uint8 = 0x1 // the address field is an offset into in-capsule data
	SGLSubTransport  uint8 = 0xA // transport specific
	SGLSubInvalidate uint8 = 0xF // RDMA: Address, and the target invalidates the key with Send with Invalidate
)

// KeyedMaxLength is the largest length a Keyed SGL Data Block can carry
// (24 bits).
const KeyedMaxLength = 1<<24 - 1

// KeyedSGL returns a Keyed SGL Data Block descriptor of subtype Address:
// length octets at addr in the memory region key names. The length is
// truncated to 24 bits. A zero address, length and key is the null
// descriptor of a command without data, as Linux's host sends it.
func KeyedSGL(addr uint64, length uint32, key uint32) SGL {
	var d SGL
	binary.LittleEndian.PutUint64(d[0:], addr)
	d[8], d[9], d[10] = byte(length), byte(length>>8), byte(length>>16)
	binary.LittleEndian.PutUint32(d[11:], key)
	d[15] = SGLTypeKeyedDataBlock<<4 | SGLSubAddress
	return d
}

// NullSGL returns the null descriptor of a command that moves no data: a
// Keyed SGL Data Block of address, length and key zero, as Linux's host
// sends it. Linux's target refuses an all-zero descriptor (an SGL Data
// Block of subtype Address) with Invalid Field.
func NullSGL() SGL { return KeyedSGL(0, 0, 0) }

// KeyedSGLInvalidate is KeyedSGL with subtype Invalidate Key: the host
// asks the target to invalidate key remotely with the response's Send
// with Invalidate.
func KeyedSGLInvalidate(addr uint64, length uint32, key uint32) SGL {
	d := KeyedSGL(addr, length, key)
	d[15] = SGLTypeKeyedDataBlock<<4 | SGLSubInvalidate
	return d
}

// InlineSGL returns an SGL Data Block descriptor of subtype Offset:
// length octets of in-capsule data starting offset octets into the
// capsule's data (NVMe-oF 1.1 §2.3.2).
func InlineSGL(offset uint64, length uint32) SGL {
	var d SGL
	binary.LittleEndian.PutUint64(d[0:], offset)
	binary.LittleEndian.PutUint32(d[8:], length)
	d[15] = SGLTypeDataBlock<<4 | SGLSubOffset
	return d
}

// ID returns the SGL Identifier (byte 15).
func (d SGL) ID() uint8 { return d[15] }

// Type returns the descriptor type (SGL Identifier bits 7:4).
func (d SGL) Type() uint8 { return d[15] >> 4 }

// Subtype returns the descriptor subtype (SGL Identifier bits 3:0).
func (d SGL) Subtype() uint8 { return d[15] & 0xF }

// Address returns bytes 7:0: an address, or for subtype Offset an
// offset.
func (d SGL) Address() uint64 { return binary.LittleEndian.Uint64(d[0:]) }

// Length returns the length: 24 bits for a Keyed SGL Data Block, 32 bits
// for the other types.
func (d SGL) Length() uint32 {
	if d.Type() == SGLTypeKeyedDataBlock {
		return uint32(d[8]) | uint32(d[9])<<8 | uint32(d[10])<<16
	}
	return binary.LittleEndian.Uint32(d[8:])
}

// Key returns the key of a Keyed SGL Data Block (bytes 14:11), or 0 for
// other types.
func (d SGL) Key() uint32 {
	if d.Type() != SGLTypeKeyedDataBlock {
		return 0
	}
	return binary.LittleEndian.Uint32(d[11:])
}

// SGLKind is how a fabrics controller treats a command's data
// descriptor.
type SGLKind uint8

// Kinds of data descriptor, as Classify finds them.
const (
	SGLInvalid         SGLKind = iota // unsupported or malformed: see the status
	SGLKeyed                          // Keyed SGL Data Block, subtype Address: RDMA Read or Write
	SGLKeyedInvalidate                // Keyed, subtype Invalidate Key: and Send with Invalidate
	SGLInCapsule                      // SGL Data Block, subtype Offset: in-capsule data
)

// Classify tells what a fabrics RDMA controller does with descriptor d,
// and for a descriptor it cannot take, which status to complete the
// command with (callers usually add DNR):
//
//   - a Keyed SGL Data Block of subtype Address or Invalidate Key is
//     SGLKeyed or SGLKeyedInvalidate (a zero length means no data);
//   - an SGL Data Block of subtype Offset is SGLInCapsule;
//   - other subtypes of those two types are StatusInvalidField (as
//     Linux's nvmet-rdma answers);
//   - every other type (Bit Bucket, Segment, Last Segment, Transport,
//     reserved) is StatusSGLTypeInvalid: fabrics controllers support one
//     descriptor in the command and no segments (NVMe-oF 1.1 §2.3.2,
//     MSDBD 1) and "SGL Descriptor Type Invalid" is the status for a type
//     the controller does not support (NVMe Base 1.4 Figure 128).
//
// It does not check the length or offset against a transfer: see
// CheckInCapsule.
func (d SGL) Classify() (SGLKind, Status) {
	switch d.Type() {
	case SGLTypeKeyedDataBlock:
		switch d.Subtype() {
		case SGLSubAddress:
			return SGLKeyed, StatusSuccess
		case SGLSubInvalidate:
			return SGLKeyedInvalidate, StatusSuccess
		}
		return SGLInvalid, StatusInvalidField
	case SGLTypeDataBlock:
		if d.Subtype() == SGLSubOffset {
			return SGLInCapsule, StatusSuccess
		}
		return SGLInvalid, StatusInvalidField
	}
	return SGLInvalid, StatusSGLTypeInvalid
}

// CheckInCapsule checks an in-capsule descriptor against the in-capsule
// data the capsule carried: have octets from where in-capsule data starts
// (ICDOFF*16 octets after the SQE; the descriptor's offset counts from
// there, NVMe-oF 1.1 §2.3.2). An offset beyond the data is
// StatusSGLOffsetInvalid (the status Linux's nvmet-rdma gives too); a
// length that runs past the data is StatusDataSGLLengthInvalid.
func (d SGL) CheckInCapsule(have int) Status {
	off, n := d.Address(), uint64(d.Length())
	if have < 0 || off > uint64(have) {
		return StatusSGLOffsetInvalid
	}
	if n > uint64(have)-off {
		return StatusDataSGLLengthInvalid
	}
	return StatusSuccess
}
