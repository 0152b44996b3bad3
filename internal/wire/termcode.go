package wire

import "fmt"

// Layer is the Terminate message's Layer field (RFC 5040 §4.8): which
// protocol layer detected the error.
type Layer uint8

// The layers of RFC 5040 §4.8.
const (
	LayerRDMAP Layer = 0 // RDMAP (RFC 5040)
	LayerDDP   Layer = 1 // DDP (RFC 5041)
	LayerLLP   Layer = 2 // the lower-layer protocol, MPA (RFC 5044)
)

// String returns "RDMAP", "DDP", "LLP" or "layer N".
func (l Layer) String() string {
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

// ErrorType is the Terminate message's Error Type field. Its meaning depends on
// the layer (RFC 5040 §4.8, RFC 5041 §7.2, RFC 5044 §8).
type ErrorType uint8

// Error types per layer.
const (
	TypeCatastrophic     ErrorType = 0 // RDMAP and DDP: local catastrophic error
	TypeRemoteProtection ErrorType = 1 // RDMAP: remote protection error
	TypeRemoteOperation  ErrorType = 2 // RDMAP: remote operation error
	TypeTaggedBuffer     ErrorType = 1 // DDP: tagged buffer error
	TypeUntaggedBuffer   ErrorType = 2 // DDP: untagged buffer error
	TypeMPA              ErrorType = 0 // LLP: MPA error
)

// TermCode identifies one Terminate error: the layer that found it, the error
// type within that layer, and the error code (RFC 5040 §4.8, RFC 5041 §7.2,
// RFC 5044 §8, RFC 6581 §9). It is a plain value: whether it was sent or
// received is for the error that carries it to say.
type TermCode struct {
	Layer Layer
	Type  ErrorType
	Code  uint8
}

// The Terminate codes of the specifications.
var (
	// RDMAP, RFC 5040 §4.8.
	TermRDMAPCatastrophic     = TermCode{LayerRDMAP, TypeCatastrophic, 0x00}
	TermRDMAPInvalidSTag      = TermCode{LayerRDMAP, TypeRemoteProtection, 0x00}
	TermRDMAPBaseBounds       = TermCode{LayerRDMAP, TypeRemoteProtection, 0x01}
	TermRDMAPAccessRights     = TermCode{LayerRDMAP, TypeRemoteProtection, 0x02}
	TermRDMAPSTagNotAssoc     = TermCode{LayerRDMAP, TypeRemoteProtection, 0x03}
	TermRDMAPTOWrap           = TermCode{LayerRDMAP, TypeRemoteProtection, 0x04}
	TermRDMAPProtInvalidate   = TermCode{LayerRDMAP, TypeRemoteProtection, 0x09}
	TermRDMAPProtUnspecified  = TermCode{LayerRDMAP, TypeRemoteProtection, 0xFF}
	TermRDMAPInvalidVersion   = TermCode{LayerRDMAP, TypeRemoteOperation, 0x05}
	TermRDMAPUnexpectedOpcode = TermCode{LayerRDMAP, TypeRemoteOperation, 0x06}
	TermRDMAPStreamCatastroph = TermCode{LayerRDMAP, TypeRemoteOperation, 0x07}
	TermRDMAPGlobalCatastroph = TermCode{LayerRDMAP, TypeRemoteOperation, 0x08}
	TermRDMAPOpInvalidate     = TermCode{LayerRDMAP, TypeRemoteOperation, 0x09}
	TermRDMAPOpUnspecified    = TermCode{LayerRDMAP, TypeRemoteOperation, 0xFF}

	// DDP, RFC 5041 §7.2.
	TermDDPCatastrophic    = TermCode{LayerDDP, TypeCatastrophic, 0x00}
	TermDDPInvalidSTag     = TermCode{LayerDDP, TypeTaggedBuffer, 0x00}
	TermDDPBaseBounds      = TermCode{LayerDDP, TypeTaggedBuffer, 0x01}
	TermDDPSTagNotAssoc    = TermCode{LayerDDP, TypeTaggedBuffer, 0x02}
	TermDDPTOWrap          = TermCode{LayerDDP, TypeTaggedBuffer, 0x03}
	TermDDPTaggedVersion   = TermCode{LayerDDP, TypeTaggedBuffer, 0x04}
	TermDDPInvalidQN       = TermCode{LayerDDP, TypeUntaggedBuffer, 0x01}
	TermDDPNoBuffer        = TermCode{LayerDDP, TypeUntaggedBuffer, 0x02}
	TermDDPMSNRange        = TermCode{LayerDDP, TypeUntaggedBuffer, 0x03}
	TermDDPInvalidMO       = TermCode{LayerDDP, TypeUntaggedBuffer, 0x04}
	TermDDPTooLong         = TermCode{LayerDDP, TypeUntaggedBuffer, 0x05}
	TermDDPUntaggedVersion = TermCode{LayerDDP, TypeUntaggedBuffer, 0x06}

	// LLP (MPA), RFC 5044 §8 and RFC 6581 §9.
	TermLLPConnLost        = TermCode{LayerLLP, TypeMPA, 0x01}
	TermLLPCRC             = TermCode{LayerLLP, TypeMPA, 0x02}
	TermLLPMarker          = TermCode{LayerLLP, TypeMPA, 0x03}
	TermLLPInvalidFrame    = TermCode{LayerLLP, TypeMPA, 0x04}
	TermLLPCatastrophic    = TermCode{LayerLLP, TypeMPA, 0x05}
	TermLLPInsufficientIRD = TermCode{LayerLLP, TypeMPA, 0x06}
	TermLLPNoRTRModel      = TermCode{LayerLLP, TypeMPA, 0x07}
)

type termInfo struct {
	code TermCode
	name string
}

// termTable lists every code of the specification tables with its name, in
// the order of the tables (docs/spec/rdmap.md §4, ddp.md §3, mpa.md §4).
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
	switch c.Layer {
	case LayerRDMAP:
		switch c.Type {
		case TypeCatastrophic:
			return "local catastrophic"
		case TypeRemoteProtection:
			return "remote protection"
		case TypeRemoteOperation:
			return "remote operation"
		}
	case LayerDDP:
		switch c.Type {
		case TypeCatastrophic:
			return "local catastrophic"
		case TypeTaggedBuffer:
			return "tagged buffer"
		case TypeUntaggedBuffer:
			return "untagged buffer"
		}
	case LayerLLP:
		if c.Type == TypeMPA {
			return "MPA"
		}
	}
	return fmt.Sprintf("type %d", uint8(c.Type))
}

// String formats the code as "LAYER/TYPE/0xCODE (meaning)", for example
// "DDP/2/0x01 (invalid QN)", the notation of the project's documents.
func (c TermCode) String() string {
	return fmt.Sprintf("%s/%d/0x%02X (%s)", c.Layer, uint8(c.Type), c.Code, c.Name())
}
