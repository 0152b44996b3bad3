package wire

import "fmt"

// RDMAPControl is the RDMAP control field, byte 1 of every DDP header
// (RFC 5040 §4.2). Under RDMAP version 1 it is RV(2) Rsv(2) Opcode(4); under
// the V2 draft's version 2 it is RV(2) Rsv(1) Opcode(5).
type RDMAPControl uint8

// RDMAP versions (the RV field).
const (
	RDMAPVersion1 = 1 // RFC 5040 and RFC 7306
	RDMAPVersion2 = 2 // draft-wood-storm-rdmap-ext-v2, only once negotiated
)

// MakeRDMAPControl builds the control field for version rv and opcode op.
// Under version 1 only the low 4 opcode bits fit; callers must not ask for a
// V2 opcode under version 1.
func MakeRDMAPControl(rv uint8, op Opcode) RDMAPControl {
	if rv == RDMAPVersion2 {
		return RDMAPControl(rv<<6 | uint8(op)&0x1F)
	}
	return RDMAPControl(rv<<6 | uint8(op)&0x0F)
}

// Version returns the RV field.
func (c RDMAPControl) Version() uint8 { return uint8(c) >> 6 }

// Opcode returns the opcode as the field's own RV reads it: 4 bits under
// version 1 (bit 0x10 is reserved and ignored, as RFC 5040 §4.2 says), 5 bits
// under version 2. Callers must check Version first.
func (c RDMAPControl) Opcode() Opcode {
	if c.Version() == RDMAPVersion2 {
		return Opcode(c & 0x1F)
	}
	return Opcode(c & 0x0F)
}

// Opcode is an RDMAP opcode (RFC 5040 §4.2, RFC 7306 §8, V2 draft §4).
type Opcode uint8

// The RDMAP opcodes.
const (
	OpWrite           Opcode = 0x0  // RDMA Write (tagged)
	OpReadRequest     Opcode = 0x1  // RDMA Read Request (QN 1)
	OpReadResponse    Opcode = 0x2  // RDMA Read Response (tagged)
	OpSend            Opcode = 0x3  // Send (QN 0)
	OpSendInv         Opcode = 0x4  // Send with Invalidate
	OpSendSE          Opcode = 0x5  // Send with Solicited Event
	OpSendSEInv       Opcode = 0x6  // Send with Solicited Event and Invalidate
	OpTerminate       Opcode = 0x7  // Terminate (QN 2)
	OpImmediate       Opcode = 0x8  // RFC 7306 Immediate Data (QN 0)
	OpImmediateSE     Opcode = 0x9  // RFC 7306 Immediate Data with Solicited Event
	OpAtomicRequest   Opcode = 0xA  // RFC 7306 Atomic Request (QN 1)
	OpAtomicResponse  Opcode = 0xB  // RFC 7306 Atomic Response (QN 3)
	OpReadV2Request   Opcode = 0x11 // V2 RDMA Read V2 Request (QN 1)
	OpReadV2Response  Opcode = 0x12 // V2 RDMA Read V2 Response (QN 3)
	OpSendImm         Opcode = 0x13 // V2 Send with Immediate Data
	OpSendInvImm      Opcode = 0x14 // V2 Send with Invalidate and Immediate Data
	OpSendSEImm       Opcode = 0x15 // V2 Send with Solicited Event and Immediate Data
	OpSendSEInvImm    Opcode = 0x16 // V2 Send with Invalidate, Solicited Event and Immediate Data
	opcodeTableLength        = 0x17
)

var opcodeNames = [opcodeTableLength]string{
	OpWrite:          "RDMA Write",
	OpReadRequest:    "RDMA Read Request",
	OpReadResponse:   "RDMA Read Response",
	OpSend:           "Send",
	OpSendInv:        "Send with Invalidate",
	OpSendSE:         "Send with SE",
	OpSendSEInv:      "Send with SE and Invalidate",
	OpTerminate:      "Terminate",
	OpImmediate:      "Immediate Data",
	OpImmediateSE:    "Immediate Data with SE",
	OpAtomicRequest:  "Atomic Request",
	OpAtomicResponse: "Atomic Response",
	OpReadV2Request:  "RDMA Read V2 Request",
	OpReadV2Response: "RDMA Read V2 Response",
	OpSendImm:        "Send with Immediate",
	OpSendInvImm:     "Send with Invalidate and Immediate",
	OpSendSEImm:      "Send with SE and Immediate",
	OpSendSEInvImm:   "Send with Invalidate, SE and Immediate",
}

// String returns the message name, or "opcode 0xNN" for an undefined opcode.
func (op Opcode) String() string {
	if int(op) < len(opcodeNames) && opcodeNames[op] != "" {
		return opcodeNames[op]
	}
	return fmt.Sprintf("opcode 0x%02X", uint8(op))
}

// Defined reports whether op is an opcode defined for RDMAP version rv:
// 0x0-0xB under version 1 (RFC 5040 and RFC 7306), those and 0x11-0x16 under
// version 2.
func (op Opcode) Defined(rv uint8) bool {
	switch {
	case op <= OpAtomicResponse:
		return rv == RDMAPVersion1 || rv == RDMAPVersion2
	case op >= OpReadV2Request && op <= OpSendSEInvImm:
		return rv == RDMAPVersion2
	}
	return false
}
