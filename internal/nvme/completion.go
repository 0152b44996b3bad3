package nvme

import "encoding/binary"

// CQELen is the size of a completion queue entry, the whole of a response
// capsule on RDMA (NVMe Base 1.4 §4.6, NVMe-oF 1.1 §2.4).
const CQELen = 16

// Completion is a completion queue entry (NVMe Base 1.4 Figure 121-125).
type Completion struct {
	DW0    uint32 // command specific, dword 0
	DW1    uint32 // command specific, dword 1
	SQHD   uint16 // SQ head pointer
	SQID   uint16 // SQ identifier
	CID    uint16 // command identifier
	Status Status // the Status Field, bits 15:1 of the last word
	Phase  bool   // P, bit 0 of the last word (unused on fabrics: 0)
}

// Result returns DW0 and DW1 as one 64-bit value (DW1 the upper half),
// e.g. the value of an 8-octet Property Get.
func (c *Completion) Result() uint64 { return uint64(c.DW1)<<32 | uint64(c.DW0) }

// SetResult sets DW0 to the low and DW1 to the high half of v.
func (c *Completion) SetResult(v uint64) { c.DW0, c.DW1 = uint32(v), uint32(v>>32) }

// DecodeCompletion reads a completion queue entry from the first CQELen
// octets of b.
func DecodeCompletion(b []byte) (Completion, error) {
	var c Completion
	err := c.Decode(b)
	return c, err
}

// Decode reads a completion queue entry from the first CQELen octets of
// b into c.
func (c *Completion) Decode(b []byte) error {
	if err := checkLen(b, CQELen, "completion queue entry"); err != nil {
		return err
	}
	le := binary.LittleEndian
	c.DW0 = le.Uint32(b[0:])
	c.DW1 = le.Uint32(b[4:])
	c.SQHD = le.Uint16(b[8:])
	c.SQID = le.Uint16(b[10:])
	c.CID = le.Uint16(b[12:])
	sf := le.Uint16(b[14:])
	c.Status = Status(sf >> 1)
	c.Phase = sf&1 != 0
	return nil
}

// Encode writes c into the first CQELen octets of b.
func (c *Completion) Encode(b []byte) error {
	if err := checkLen(b, CQELen, "completion queue entry"); err != nil {
		return err
	}
	le := binary.LittleEndian
	le.PutUint32(b[0:], c.DW0)
	le.PutUint32(b[4:], c.DW1)
	le.PutUint16(b[8:], c.SQHD)
	le.PutUint16(b[10:], c.SQID)
	le.PutUint16(b[12:], c.CID)
	sf := uint16(c.Status) << 1
	if c.Phase {
		sf |= 1
	}
	le.PutUint16(b[14:], sf)
	return nil
}
