package rdma

import "fmt"

// TermLayer is the Terminate message's Layer field (RFC 5040 §4.8): which
// protocol layer detected the error.
type TermLayer uint8

// The layers of RFC 5040 §4.8.
const (
	LayerRDMAP TermLayer = 0 // RDMAP (RFC 5040)
	LayerDDP   TermLayer = 1 // DDP (RFC 5041)
	LayerLLP   TermLayer = 2 // the lower-layer protocol, MPA (RFC 5044)
)

// String returns "RDMAP", "DDP", "LLP" or "layer N".
func (l TermLayer) String() string {
	switch l {
	case LayerRDMAP:
		return "RDMAP"
	case LayerDDP:
		return "DDP"
	case LayerLLP:
		return "LLP"
	}
	return fmt.Sprintf("layer %d", uint8(l))
}

// Error types of a Terminate, per layer (RFC 5040 §4.8, RFC 5041 §7.2,
// RFC 5044 §8): the meaning of a type depends on its layer.
const (
	TypeCatastrophic     = 0 // RDMAP and DDP: local catastrophic error
	TypeRemoteProtection = 1 // RDMAP: remote protection error
	TypeRemoteOperation  = 2 // RDMAP: remote operation error
	TypeTaggedBuffer     = 1 // DDP: tagged buffer error
	TypeUntaggedBuffer   = 2 // DDP: untagged buffer error
	TypeMPA              = 0 // LLP: MPA error
)

// TermCode identifies one Terminate error: the layer that found it (4
// bits), the error type within that layer (4 bits) and the error code (8
// bits), packed as the first 16 bits of the Terminate Control field carry
// them (RFC 5040 §4.8). The codes of the specifications are constants; any
// other value is a code this stack does not know, which a peer may still
// send.
type TermCode uint16

// MakeTermCode packs a layer, an error type and an error code. Only the low
// 4 bits of layer and typ are kept.
func MakeTermCode(layer TermLayer, typ, code uint8) TermCode {
	return TermCode(uint16(layer&0xF)<<12 | uint16(typ&0xF)<<8 | uint16(code))
}

// Layer returns the layer that found the error.
func (c TermCode) Layer() TermLayer { return TermLayer(c >> 12) }

// Type returns the error type within the layer.
func (c TermCode) Type() uint8 { return uint8(c>>8) & 0xF }

// Code returns the error code within the type.
func (c TermCode) Code() uint8 { return uint8(c) }

// The Terminate codes of the specifications.
const (
	// RDMAP, RFC 5040 §4.8.
	TermRDMAPCatastrophic     TermCode = 0x0000
	TermRDMAPInvalidSTag      TermCode = 0x0100
	TermRDMAPBaseBounds       TermCode = 0x0101
	TermRDMAPAccessRights     TermCode = 0x0102
	TermRDMAPSTagNotAssoc     TermCode = 0x0103
	TermRDMAPTOWrap           TermCode = 0x0104
	TermRDMAPProtInvalidate   TermCode = 0x0109
	TermRDMAPProtUnspecified  TermCode = 0x01FF
	TermRDMAPInvalidVersion   TermCode = 0x0205
	TermRDMAPUnexpectedOpcode TermCode = 0x0206
	TermRDMAPStreamCatastroph TermCode = 0x0207
	TermRDMAPGlobalCatastroph TermCode = 0x0208
	TermRDMAPOpInvalidate     TermCode = 0x0209
	TermRDMAPOpUnspecified    TermCode = 0x02FF

	// DDP, RFC 5041 §7.2.
	TermDDPCatastrophic    TermCode = 0x1000
	TermDDPInvalidSTag     TermCode = 0x1100
	TermDDPBaseBounds      TermCode = 0x1101
	TermDDPSTagNotAssoc    TermCode = 0x1102
	TermDDPTOWrap          TermCode = 0x1103
	TermDDPTaggedVersion   TermCode = 0x1104
	TermDDPInvalidQN       TermCode = 0x1201
	TermDDPNoBuffer        TermCode = 0x1202
	TermDDPMSNRange        TermCode = 0x1203
	TermDDPInvalidMO       TermCode = 0x1204
	TermDDPTooLong         TermCode = 0x1205
	TermDDPUntaggedVersion TermCode = 0x1206

	// LLP (MPA), RFC 5044 §8 and RFC 6581 §9.
	TermLLPConnLost        TermCode = 0x2001
	TermLLPCRC             TermCode = 0x2002
	TermLLPMarker          TermCode = 0x2003
	TermLLPInvalidFrame    TermCode = 0x2004
	TermLLPCatastrophic    TermCode = 0x2005
	TermLLPInsufficientIRD TermCode = 0x2006
	TermLLPNoRTRModel      TermCode = 0x2007
)

type termInfo struct {
	code TermCode
	name string
}

// termTable lists every code of the specification tables with its name, in
// the order of the tables (docs/wire.md).
var termTable = [...]termInfo{
	{TermRDMAPCatastrophic, "local catastrophic error"},
	{TermRDMAPInvalidSTag, "invalid STag"},
	{TermRDMAPBaseBounds, "base or bounds violation"},
	{TermRDMAPAccessRights, "access rights violation"},
	{TermRDMAPSTagNotAssoc, "STag not associated with RDMAP stream"},
	{TermRDMAPTOWrap, "TO wrap"},
	{TermRDMAPProtInvalidate, "STag cannot be invalidated"},
	{TermRDMAPProtUnspecified, "unspecified remote protection error"},
	{TermRDMAPInvalidVersion, "invalid RDMAP version"},
	{TermRDMAPUnexpectedOpcode, "unexpected opcode"},
	{TermRDMAPStreamCatastroph, "catastrophic error, localized to RDMAP stream"},
	{TermRDMAPGlobalCatastroph, "catastrophic error, global"},
	{TermRDMAPOpInvalidate, "STag cannot be invalidated"},
	{TermRDMAPOpUnspecified, "unspecified remote operation error"},

	{TermDDPCatastrophic, "local catastrophic error"},
	{TermDDPInvalidSTag, "invalid STag"},
	{TermDDPBaseBounds, "base or bounds violation"},
	{TermDDPSTagNotAssoc, "STag not associated with DDP stream"},
	{TermDDPTOWrap, "TO wrap"},
	{TermDDPTaggedVersion, "invalid DDP version"},
	{TermDDPInvalidQN, "invalid QN"},
	{TermDDPNoBuffer, "invalid MSN: no buffer available"},
	{TermDDPMSNRange, "invalid MSN: MSN out of range"},
	{TermDDPInvalidMO, "invalid MO"},
	{TermDDPTooLong, "DDP message too long for the available buffer"},
	{TermDDPUntaggedVersion, "invalid DDP version"},

	{TermLLPConnLost, "TCP connection closed, terminated or lost"},
	{TermLLPCRC, "received MPA CRC does not match"},
	{TermLLPMarker, "marker and ULPDU_Length / FPDU start mismatch"},
	{TermLLPInvalidFrame, "invalid MPA Request or Reply frame"},
	{TermLLPCatastrophic, "local catastrophic error"},
	{TermLLPInsufficientIRD, "insufficient IRD resources"},
	{TermLLPNoRTRModel, "no matching RTR model"},
}

// AllTermCodes returns every Terminate code of the specification tables, in
// table order. The caller owns the returned slice.
func AllTermCodes() []TermCode {
	out := make([]TermCode, len(termTable))
	for i, t := range termTable {
		out[i] = t.code
	}
	return out
}

// Known reports whether c is one of the codes of the specification tables.
func (c TermCode) Known() bool {
	_, ok := c.lookup()
	return ok
}

func (c TermCode) lookup() (string, bool) {
	for _, t := range termTable {
		if t.code == c {
			return t.name, true
		}
	}
	return "", false
}

// Name returns the code's meaning as the specification tables word it, or
// "unknown code" for a code not in them.
func (c TermCode) Name() string {
	if n, ok := c.lookup(); ok {
		return n
	}
	return "unknown code"
}

// TypeName returns the name of the code's error type within its layer.
func (c TermCode) TypeName() string {
	t := c.Type()
	switch c.Layer() {
	case LayerRDMAP, LayerDDP:
		if t == TypeCatastrophic {
			return "local catastrophic"
		}
		names := [2][3]string{{"", "remote protection", "remote operation"}, {"", "tagged buffer", "untagged buffer"}}
		if t <= 2 {
			return names[c.Layer()][t]
		}
	case LayerLLP:
		if t == TypeMPA {
			return "MPA"
		}
	}
	return fmt.Sprintf("type %d", t)
}

// String formats the code as "LAYER/TYPE/0xCODE (meaning)", for example
// "DDP/2/0x01 (invalid QN)", the notation of the project's documents.
func (c TermCode) String() string {
	return fmt.Sprintf("%s/%d/0x%02X (%s)", c.Layer(), c.Type(), c.Code(), c.Name())
}
