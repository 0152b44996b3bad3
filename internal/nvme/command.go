package nvme

import "encoding/binary"

// SQELen is the size of a submission queue entry, the command part of a
// command capsule (NVMe Base 1.4 §4.2, NVMe-oF 1.1 §2.3.1).
const SQELen = 64

// Command flags (CDW0 bits 15:8, NVMe Base 1.4 Figure 105).
const (
	FlagFuseMask  = 0x03 // FUSE: fused operation (bits 1:0)
	FlagFuseFirst = 0x01 // FUSE 01b: first command of a fused operation
	FlagFuseLast  = 0x02 // FUSE 10b: second command of a fused operation
	FlagPSDTMask  = 0xC0 // PSDT: PRP or SGL for data transfer (bits 7:6)
	// FlagSGL is PSDT 01b: SGLs, MPTR the address of a contiguous
	// metadata buffer. NVMe over Fabrics requires SGLs (NVMe-oF 1.1 §2.3.1).
	FlagSGL = 0x40
	// FlagSGLSegment is PSDT 10b: SGLs, MPTR the address of an SGL
	// segment holding one descriptor.
	FlagSGLSegment = 0x80
)

// Command is a submission queue entry (NVMe Base 1.4 Figure 104-106).
// Command-specific dwords are plain fields; the accessors in this package
// (Connect, RW, Identify, GetLogPage ...) give them their meaning per
// opcode. For Fabrics commands (opcode 0x7F) byte 4, the NSID's low octet,
// is FCTYPE (NVMe-oF 1.1 Figure 9); see FCType.
type Command struct {
	Opcode uint8  // OPC, CDW0 bits 7:0
	Flags  uint8  // FUSE and PSDT, CDW0 bits 15:8; see FlagSGL
	CID    uint16 // command identifier, CDW0 bits 31:16
	NSID   uint32 // namespace identifier (bytes 7:4)
	CDW2   uint32 // bytes 11:8
	CDW3   uint32 // bytes 15:12
	MPTR   uint64 // metadata pointer (bytes 23:16)
	DPTR   SGL    // data pointer as SGL entry 1 (bytes 39:24)
	CDW10  uint32 // bytes 43:40
	CDW11  uint32 // bytes 47:44
	CDW12  uint32 // bytes 51:48
	CDW13  uint32 // bytes 55:52
	CDW14  uint32 // bytes 59:56
	CDW15  uint32 // bytes 63:60
}

// DecodeCommand reads a submission queue entry from the first SQELen
// octets of b.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	err := c.Decode(b)
	return c, err
}

// Decode reads a submission queue entry from the first SQELen octets of
// b into c.
func (c *Command) Decode(b []byte) error {
	if err := checkLen(b, SQELen, "submission queue entry"); err != nil {
		return err
	}
	le := binary.LittleEndian
	c.Opcode = b[0]
	c.Flags = b[1]
	c.CID = le.Uint16(b[2:])
	c.NSID = le.Uint32(b[4:])
	c.CDW2 = le.Uint32(b[8:])
	c.CDW3 = le.Uint32(b[12:])
	c.MPTR = le.Uint64(b[16:])
	copy(c.DPTR[:], b[24:40])
	c.CDW10 = le.Uint32(b[40:])
	c.CDW11 = le.Uint32(b[44:])
	c.CDW12 = le.Uint32(b[48:])
	c.CDW13 = le.Uint32(b[52:])
	c.CDW14 = le.Uint32(b[56:])
	c.CDW15 = le.Uint32(b[60:])
	return nil
}

// Encode writes c into the first SQELen octets of b.
func (c *Command) Encode(b []byte) error {
	if err := checkLen(b, SQELen, "submission queue entry"); err != nil {
		return err
	}
	le := binary.LittleEndian
	b[0] = c.Opcode
	b[1] = c.Flags
	le.PutUint16(b[2:], c.CID)
	le.PutUint32(b[4:], c.NSID)
	le.PutUint32(b[8:], c.CDW2)
	le.PutUint32(b[12:], c.CDW3)
	le.PutUint64(b[16:], c.MPTR)
	copy(b[24:40], c.DPTR[:])
	le.PutUint32(b[40:], c.CDW10)
	le.PutUint32(b[44:], c.CDW11)
	le.PutUint32(b[48:], c.CDW12)
	le.PutUint32(b[52:], c.CDW13)
	le.PutUint32(b[56:], c.CDW14)
	le.PutUint32(b[60:], c.CDW15)
	return nil
}

// Fuse returns the FUSE field (FlagFuseFirst, FlagFuseLast or 0).
func (c Command) Fuse() uint8 { return c.Flags & FlagFuseMask }

// PSDT returns the PSDT field (0 PRP, 1 SGL, 2 SGL with MPTR a segment).
func (c Command) PSDT() uint8 { return c.Flags >> 6 }

// CheckFlags returns the status a fabrics controller gives a command
// whose CDW0 flags it cannot take: StatusInvalidField for fused
// operations (this package's users support none) or for a PSDT other
// than SGL (NVMe-oF 1.1 §2.3.1: "the PSDT field shall be set to 01b").
// Reserved bits 5:2 are ignored.
func (c Command) CheckFlags() Status {
	if c.Fuse() != 0 || c.Flags&FlagPSDTMask != FlagSGL {
		return StatusInvalidField
	}
	return StatusSuccess
}

// Direction is the data transfer direction of an opcode (NVMe Base 1.4
// Figure 139, bits 1:0 of the opcode; for Fabrics commands, of FCTYPE).
type Direction uint8

// Data transfer directions.
const (
	DirNone          Direction = 0 // no data transfer
	DirHostToCtrl    Direction = 1 // host to controller (a write)
	DirCtrlToHost    Direction = 2 // controller to host (a read)
	DirBidirectional Direction = 3 // both
)

// DataDirection returns the direction of data transfer the command's
// opcode (or, for a Fabrics command, its FCTYPE) names.
func (c Command) DataDirection() Direction {
	if c.Opcode == AdminFabrics {
		return Direction(uint8(c.NSID) & 3)
	}
	return Direction(c.Opcode & 3)
}

// SetCDW sets command dword n, 10 to 15; other n are ignored.
func (c *Command) SetCDW(n int, v uint32) {
	if p := c.cdw(n); p != nil {
		*p = v
	}
}

// CDW returns command dword n, 10 to 15, or 0 for other n.
func (c *Command) CDW(n int) uint32 {
	if p := c.cdw(n); p != nil {
		return *p
	}
	return 0
}

// cdw returns the field of command dword n, or nil.
func (c *Command) cdw(n int) *uint32 {
	switch n {
	case 10:
		return &c.CDW10
	case 11:
		return &c.CDW11
	case 12:
		return &c.CDW12
	case 13:
		return &c.CDW13
	case 14:
		return &c.CDW14
	case 15:
		return &c.CDW15
	}
	return nil
}
