package wire

// HeaderKind names the RDMAP header that follows the DDP header of a
// message (RFC 5040 §4, RFC 7306 §5-6, V2 draft §4).
type HeaderKind uint8

// The RDMAP headers.
const (
	HeaderNone           HeaderKind = iota // Write, Read Response, Sends, Read V2 Response
	HeaderReadRequest                      // ReadRequest, 28 bytes
	HeaderTerminate                        // Terminate, 4 bytes and more
	HeaderImmediate                        // ImmediateData, 8 bytes
	HeaderAtomicRequest                    // AtomicRequest, 52 bytes
	HeaderAtomicResponse                   // AtomicResponse, 12 bytes
	HeaderReadV2Request                    // ReadV2Request, 16 bytes
)

var headerKindNames = [...]string{
	HeaderNone:           "none",
	HeaderReadRequest:    "Read Request",
	HeaderTerminate:      "Terminate",
	HeaderImmediate:      "Immediate Data",
	HeaderAtomicRequest:  "Atomic Request",
	HeaderAtomicResponse: "Atomic Response",
	HeaderReadV2Request:  "Read V2 Request",
}

// String returns the header's name.
func (k HeaderKind) String() string {
	if int(k) < len(headerKindNames) {
		return headerKindNames[k]
	}
	return "unknown header"
}

// OpInfo describes how an opcode travels on the wire, in the spirit of
// siw's iwarp_pktinfo table (RFC 5040 §4-5, RFC 7306 §5-8, V2 draft §4).
type OpInfo struct {
	// Opcode is the opcode described.
	Opcode Opcode
	// MinVersion is the lowest RDMAP version that defines the opcode
	// (RDMAPVersion1, or RDMAPVersion2 for the V2 opcodes).
	MinVersion uint8
	// Tagged says the message uses the tagged buffer model.
	Tagged bool
	// QN is the queue number an untagged message must carry.
	QN uint32
	// Header is the RDMAP header that follows the DDP header.
	Header HeaderKind
	// HeaderLen is that header's length; for the Terminate, the length of
	// its fixed part (the control field), more may follow.
	HeaderLen int
	// SingleSegment says the message is exactly one DDP segment (L=1,
	// MO=0 when untagged).
	SingleSegment bool
	// Payload says the message may carry payload after its header.
	Payload bool
	// ImmediateLast says the message's last segment (L=1) carries only
	// the 8 immediate bytes (V2 Send with Immediate).
	ImmediateLast bool
	// Invalidate says the untagged header's ULP field carries the
	// Invalidate STag (Send with Invalidate and its SE/V2 variants).
	Invalidate bool
	// Solicited says the message raises a Solicited Event at the data
	// sink (the SE variants of Send and Immediate Data).
	Solicited bool
}

// opTable is the table of rdmap.md §2 and extensions.md §1-2.
var opTable = [opcodeTableLength]OpInfo{
	OpWrite:          opTagged(OpWrite, RDMAPVersion1),
	OpReadRequest:    opRequest(OpReadRequest, RDMAPVersion1, QNReadReq, HeaderReadRequest, ReadRequestLen),
	OpReadResponse:   opTagged(OpReadResponse, RDMAPVersion1),
	OpSend:           opSend(OpSend, RDMAPVersion1, false, false, false),
	OpSendInv:        opSend(OpSendInv, RDMAPVersion1, true, false, false),
	OpSendSE:         opSend(OpSendSE, RDMAPVersion1, false, true, false),
	OpSendSEInv:      opSend(OpSendSEInv, RDMAPVersion1, true, true, false),
	OpTerminate:      opRequest(OpTerminate, RDMAPVersion1, QNTerminate, HeaderTerminate, TermControlLen),
	OpImmediate:      opRequest(OpImmediate, RDMAPVersion1, QNSend, HeaderImmediate, ImmediateDataLen),
	OpImmediateSE:    opSolicited(opRequest(OpImmediateSE, RDMAPVersion1, QNSend, HeaderImmediate, ImmediateDataLen)),
	OpAtomicRequest:  opRequest(OpAtomicRequest, RDMAPVersion1, QNReadReq, HeaderAtomicRequest, AtomicRequestLen),
	OpAtomicResponse: opRequest(OpAtomicResponse, RDMAPVersion1, QNResponse, HeaderAtomicResponse, AtomicResponseLen),
	OpReadV2Request:  opRequest(OpReadV2Request, RDMAPVersion2, QNReadReq, HeaderReadV2Request, ReadV2RequestLen),
	OpReadV2Response: {Opcode: OpReadV2Response, MinVersion: RDMAPVersion2, QN: QNResponse, Payload: true},
	OpSendImm:        opSend(OpSendImm, RDMAPVersion2, false, false, true),
	OpSendInvImm:     opSend(OpSendInvImm, RDMAPVersion2, true, false, true),
	OpSendSEImm:      opSend(OpSendSEImm, RDMAPVersion2, false, true, true),
	OpSendSEInvImm:   opSend(OpSendSEInvImm, RDMAPVersion2, true, true, true),
}

// opTagged describes a tagged message: payload, any number of segments.
func opTagged(op Opcode, rv uint8) OpInfo {
	return OpInfo{Opcode: op, MinVersion: rv, Tagged: true, Payload: true}
}

// opRequest describes a single-segment untagged message made of its header.
func opRequest(op Opcode, rv uint8, qn uint32, h HeaderKind, n int) OpInfo {
	return OpInfo{Opcode: op, MinVersion: rv, QN: qn, Header: h, HeaderLen: n, SingleSegment: true}
}

// opSend describes a Send-type message on QN 0.
func opSend(op Opcode, rv uint8, inv, se, imm bool) OpInfo {
	return OpInfo{Opcode: op, MinVersion: rv, QN: QNSend, Payload: true,
		Invalidate: inv, Solicited: se, ImmediateLast: imm}
}

func opSolicited(i OpInfo) OpInfo {
	i.Solicited = true
	return i
}

// LookupOpcode returns the wire description of op under RDMAP version rv,
// and false if op is not defined for rv (see Opcode.Defined). op is the
// opcode as read by the control field's own version (RDMAPControl.Opcode).
func LookupOpcode(rv uint8, op Opcode) (OpInfo, bool) {
	if !op.Defined(rv) {
		return OpInfo{}, false
	}
	return opTable[op], true
}

// ValidateDDPHeader checks a received DDP header as a receiver does before
// it looks at anything else, in siw's order (siw_get_hdr, then the per-opcode
// queue check), and returns the predeclared error of the first violation:
//
//  1. DDP version is 1: else ErrDDPTaggedVersion (DDP/1/0x04) or
//     ErrDDPUntaggedVersion (DDP/2/0x06), by the T bit (RFC 5041 §7.2);
//  2. RDMAP version is rv, the negotiated one: else ErrInvalidRDMAPVersion
//     (RDMAP/2/0x05);
//  3. the opcode is defined for rv (under version 1 the reserved bit 0x10
//     is ignored, so a V2 opcode reads as its low 4 bits): else
//     ErrUnexpectedOpcode (RDMAP/2/0x06);
//  4. the T bit matches the opcode's buffer model: else ErrOpcodeModel
//     (RDMAP/2/0x06, project choice);
//  5. an untagged segment carries the opcode's QN: else ErrInvalidQN
//     (DDP/2/0x01).
//
// It returns the opcode's OpInfo when all checks pass.
func ValidateDDPHeader(h *DDPHeader, rv uint8) (OpInfo, error) {
	if err := h.CheckDDPVersion(); err != nil {
		return OpInfo{}, err
	}
	if h.Control.Version() != rv {
		return OpInfo{}, ErrInvalidRDMAPVersion
	}
	info, ok := LookupOpcode(rv, h.Control.Opcode())
	if !ok {
		return OpInfo{}, ErrUnexpectedOpcode
	}
	if info.Tagged != h.Tagged {
		return info, ErrOpcodeModel
	}
	if !h.Tagged && h.QN != info.QN {
		return info, ErrInvalidQN
	}
	return info, nil
}
