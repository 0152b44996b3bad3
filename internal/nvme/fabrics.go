package nvme

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Fabrics command types, FCTYPE in byte 4 of a Fabrics command (NVMe-oF
// 1.1 Figure 10). Bits 1:0 are the data transfer direction.
const (
	FCTypePropertySet uint8 = 0x00 // Property Set
	FCTypeConnect     uint8 = 0x01 // Connect
	FCTypePropertyGet uint8 = 0x04 // Property Get
	FCTypeAuthSend    uint8 = 0x05 // Authentication Send
	FCTypeAuthReceive uint8 = 0x06 // Authentication Receive
	FCTypeDisconnect  uint8 = 0x08 // Disconnect (NVMe-oF 1.1)
)

// Sizes and values of the Connect command and its data.
const (
	ConnectRECFMT  uint16 = 0    // the only Connect record format
	ConnectDataLen        = 1024 // the Connect data's size
	NQNFieldLen           = 256  // an NQN field: NUL-terminated UTF-8
	NQNMaxLen             = 223  // the longest NQN, in octets (NVMe Base 1.4 §7.9)
	AdminQID       uint16 = 0    // the admin queue's QID
)

var fctypeNames = map[uint8]string{
	FCTypePropertySet: "Property Set", FCTypeConnect: "Connect", FCTypePropertyGet: "Property Get",
	FCTypeAuthSend: "Authentication Send", FCTypeAuthReceive: "Authentication Receive",
	FCTypeDisconnect: "Disconnect",
}

// FCTypeName names a Fabrics command type, or "fctype 0xNN".
func FCTypeName(t uint8) string {
	return nameOr(fctypeNames, t, "fctype")
}

// FCType returns a Fabrics command's FCTYPE (byte 4).
func (c Command) FCType() uint8 { return uint8(c.NSID) }

// newFabrics returns a Fabrics command of type t with SGL data pointing
// at dptr.
func newFabrics(t uint8, cid uint16, dptr SGL) Command {
	return Command{Opcode: AdminFabrics, Flags: FlagSGL, CID: cid, NSID: uint32(t), DPTR: dptr}
}

// Connect is the command-specific part of a Connect command (NVMe-oF 1.1
// Figure 19): bytes 41:40 RECFMT, 43:42 QID, 45:44 SQSIZE (0's based),
// 46 CATTR, 51:48 KATO (milliseconds; admin queue only).
type Connect struct {
	RECFMT uint16
	QID    uint16
	SQSIZE uint16 // 0's based submission queue size
	CATTR  uint8  // Connect attributes: CATTRSQFlowDisable
	KATO   uint32 // keep alive timeout in milliseconds
}

// CATTRSQFlowDisable is the Connect attribute (CATTR bit 2) asking that
// SQ flow control be disabled: SQHD is then reserved (NVMe-oF 1.1 Figure
// 19).
const CATTRSQFlowDisable uint8 = 1 << 2

// Connect reads the Connect fields of a Fabrics command.
func (c Command) Connect() Connect {
	return Connect{
		RECFMT: uint16(c.CDW10),
		QID:    uint16(c.CDW10 >> 16),
		SQSIZE: uint16(c.CDW11),
		CATTR:  uint8(c.CDW11 >> 16),
		KATO:   c.CDW12,
	}
}

// Command returns a Connect command with identifier cid whose data (the
// ConnectData) dptr describes.
func (k Connect) Command(cid uint16, dptr SGL) Command {
	c := newFabrics(FCTypeConnect, cid, dptr)
	c.CDW10 = uint32(k.RECFMT) | uint32(k.QID)<<16
	c.CDW11 = uint32(k.SQSIZE) | uint32(k.CATTR)<<16
	c.CDW12 = k.KATO
	return c
}

// ConnectData is the 1024-octet data of a Connect command (NVMe-oF 1.1
// Figure 20).
type ConnectData struct {
	HOSTID  [16]byte // host identifier, a UUID (bytes 15:00)
	CNTLID  uint16   // controller ID: 0xFFFF for the dynamic model, else the admin queue's (17:16)
	SUBNQN  string   // subsystem NQN (511:256)
	HOSTNQN string   // host NQN (767:512)
}

// CNTLIDDynamic is the CNTLID of an admin queue's Connect data asking the
// subsystem to allocate any controller (the dynamic controller model).
const CNTLIDDynamic uint16 = 0xFFFF

// Offsets into the Connect data, for a Connect Invalid Parameters
// response's IPO (NVMe-oF 1.1 Figure 21).
const (
	ConnectDataOffHOSTID  = 0
	ConnectDataOffCNTLID  = 16
	ConnectDataOffSUBNQN  = 256
	ConnectDataOffHOSTNQN = 512
)

// Offsets into the Connect command, for IPO.
const (
	ConnectOffRECFMT = 40
	ConnectOffQID    = 42
	ConnectOffSQSIZE = 44
	ConnectOffCATTR  = 46
	ConnectOffKATO   = 48
)

// ErrNQNTooLong is returned by encoders given a string too long for a
// 256-octet NUL-terminated field.
var ErrNQNTooLong = errors.New("nvme: string too long for its field")

// ErrNQNUnterminated is returned by DecodeConnectData for an NQN field
// without a NUL.
var ErrNQNUnterminated = errors.New("nvme: NQN field without a NUL terminator")

// DecodeConnectData reads Connect data from the first ConnectDataLen
// octets of b. An NQN field without a NUL is an error (NVMe-oF 1.1 Figure
// 20: "NUL-terminated"); its return value then still has the other
// fields and the NQN's 256 octets, so that a target can answer with
// Connect Invalid Parameters at the right offset.
func DecodeConnectData(b []byte) (ConnectData, error) {
	var d ConnectData
	if err := checkLen(b, ConnectDataLen, "Connect data"); err != nil {
		return d, err
	}
	copy(d.HOSTID[:], b[0:16])
	d.CNTLID = binary.LittleEndian.Uint16(b[16:])
	var ok1, ok2 bool
	d.SUBNQN, ok1 = cString(b[256:512])
	d.HOSTNQN, ok2 = cString(b[512:768])
	if !ok1 || !ok2 {
		return d, ErrNQNUnterminated
	}
	return d, nil
}

// Encode writes d into the first ConnectDataLen octets of b, reserved
// octets zero.
func (d *ConnectData) Encode(b []byte) error {
	if err := checkLen(b, ConnectDataLen, "Connect data"); err != nil {
		return err
	}
	if len(d.SUBNQN) >= NQNFieldLen || len(d.HOSTNQN) >= NQNFieldLen {
		return ErrNQNTooLong
	}
	clear(b[:ConnectDataLen])
	copy(b[0:16], d.HOSTID[:])
	binary.LittleEndian.PutUint16(b[16:], d.CNTLID)
	copy(b[256:], d.SUBNQN)
	copy(b[512:], d.HOSTNQN)
	return nil
}

// cString returns the octets of f before its first NUL, and whether f
// has one.
func cString(f []byte) (string, bool) {
	if i := bytes.IndexByte(f, 0); i >= 0 {
		return string(f[:i]), true
	}
	return string(f), false
}

// CheckNQN reports whether s can be an NQN: 1 to NQNMaxLen octets, no
// NUL (NVMe Base 1.4 §7.9). It does not check the "nqn." format.
func CheckNQN(s string) bool {
	return len(s) > 0 && len(s) <= NQNMaxLen && !bytes.Contains([]byte(s), []byte{0})
}

// ConnectResponse is DW0 of a successful Connect's completion (NVMe-oF
// 1.1 Figure 21): the controller ID in bits 15:0 and AUTHREQ in bits
// 31:16.
type ConnectResponse struct {
	CNTLID  uint16
	AUTHREQ uint16 // authentication requirements; 0 when none
}

// DW0 returns the completion dword of r.
func (r ConnectResponse) DW0() uint32 { return uint32(r.CNTLID) | uint32(r.AUTHREQ)<<16 }

// ParseConnectResponse reads DW0 of a successful Connect's completion.
func ParseConnectResponse(dw0 uint32) ConnectResponse {
	return ConnectResponse{CNTLID: uint16(dw0), AUTHREQ: uint16(dw0 >> 16)}
}

// InvalidParam is DW0 of a Connect completed with Connect Invalid
// Parameters (NVMe-oF 1.1 Figure 21): IPO, the offset of the offending
// field, in bits 15:0, and IATTR in bits 23:16, bit 16 set when the
// offset is into the Connect data rather than the command.
type InvalidParam struct {
	IPO    uint16 // offset of the invalid parameter
	InData bool   // IATTR bit 0: IPO is an offset into the Connect data
}

// DW0 returns the completion dword of p.
func (p InvalidParam) DW0() uint32 {
	v := uint32(p.IPO)
	if p.InData {
		v |= 1 << 16
	}
	return v
}

// ParseInvalidParam reads DW0 of a Connect Invalid Parameters completion.
func ParseInvalidParam(dw0 uint32) InvalidParam {
	return InvalidParam{IPO: uint16(dw0), InData: dw0&(1<<16) != 0}
}

// Property sizes for Property Get and Set (ATTRIB bits 2:0).
const (
	PropertySize4 uint8 = 0 // a 4-octet property
	PropertySize8 uint8 = 1 // an 8-octet property
)

// Property is the command-specific part of a Property Get or Property Set
// (NVMe-oF 1.1 Figure 14, 16): ATTRIB at byte 40, OFST at bytes 47:44
// and, for Property Set, VALUE at bytes 55:48.
type Property struct {
	ATTRIB uint8  // bits 2:0 the size: PropertySize4 or PropertySize8
	OFST   uint32 // the property's offset
	VALUE  uint64 // Property Set's value (4-octet properties use the low half)
}

// Size returns the property size in octets ATTRIB names: 4, 8, or 0 for
// a reserved value.
func (p Property) Size() int {
	switch p.ATTRIB & 7 {
	case PropertySize4:
		return 4
	case PropertySize8:
		return 8
	}
	return 0
}

// Property reads the fields of a Property Get or Set command.
func (c Command) Property() Property {
	return Property{ATTRIB: uint8(c.CDW10), OFST: c.CDW11, VALUE: uint64(c.CDW13)<<32 | uint64(c.CDW12)}
}

// PropertyGetCommand returns a Property Get command for the property of
// size octets (4 or 8) at offset ofst.
func PropertyGetCommand(cid uint16, ofst uint32, size int) Command {
	c := newFabrics(FCTypePropertyGet, cid, NullSGL())
	c.CDW10 = uint32(propertyAttrib(size))
	c.CDW11 = ofst
	return c
}

// PropertySetCommand returns a Property Set command writing value to the
// property of size octets (4 or 8) at offset ofst.
func PropertySetCommand(cid uint16, ofst uint32, size int, value uint64) Command {
	c := newFabrics(FCTypePropertySet, cid, NullSGL())
	c.CDW10 = uint32(propertyAttrib(size))
	c.CDW11 = ofst
	c.CDW12, c.CDW13 = uint32(value), uint32(value>>32)
	return c
}

func propertyAttrib(size int) uint8 {
	if size == 8 {
		return PropertySize8
	}
	return PropertySize4
}

// DisconnectCommand returns a Disconnect command (NVMe-oF 1.1 §3.4),
// RECFMT 0, for the queue it is sent on.
func DisconnectCommand(cid uint16) Command {
	return newFabrics(FCTypeDisconnect, cid, NullSGL())
}
