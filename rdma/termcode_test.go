package rdma

import (
	"testing"
)

// TermCode String and Name for every code of the tables (docs/spec/
// rdmap.md §4, ddp.md §3, mpa.md §4).
func TestTermCodeStrings(t *testing.T) {
	want := map[TermCode]string{
		TermRDMAPCatastrophic:     "RDMAP/0/0x00 (local catastrophic error)",
		TermRDMAPInvalidSTag:      "RDMAP/1/0x00 (invalid STag)",
		TermRDMAPBaseBounds:       "RDMAP/1/0x01 (base or bounds violation)",
		TermRDMAPAccessRights:     "RDMAP/1/0x02 (access rights violation)",
		TermRDMAPSTagNotAssoc:     "RDMAP/1/0x03 (STag not associated with RDMAP stream)",
		TermRDMAPTOWrap:           "RDMAP/1/0x04 (TO wrap)",
		TermRDMAPProtInvalidate:   "RDMAP/1/0x09 (STag cannot be invalidated)",
		TermRDMAPProtUnspecified:  "RDMAP/1/0xFF (unspecified remote protection error)",
		TermRDMAPInvalidVersion:   "RDMAP/2/0x05 (invalid RDMAP version)",
		TermRDMAPUnexpectedOpcode: "RDMAP/2/0x06 (unexpected opcode)",
		TermRDMAPStreamCatastroph: "RDMAP/2/0x07 (catastrophic error, localized to RDMAP stream)",
		TermRDMAPGlobalCatastroph: "RDMAP/2/0x08 (catastrophic error, global)",
		TermRDMAPOpInvalidate:     "RDMAP/2/0x09 (STag cannot be invalidated)",
		TermRDMAPOpUnspecified:    "RDMAP/2/0xFF (unspecified remote operation error)",
		TermDDPCatastrophic:       "DDP/0/0x00 (local catastrophic error)",
		TermDDPInvalidSTag:        "DDP/1/0x00 (invalid STag)",
		TermDDPBaseBounds:         "DDP/1/0x01 (base or bounds violation)",
		TermDDPSTagNotAssoc:       "DDP/1/0x02 (STag not associated with DDP stream)",
		TermDDPTOWrap:             "DDP/1/0x03 (TO wrap)",
		TermDDPTaggedVersion:      "DDP/1/0x04 (invalid DDP version)",
		TermDDPInvalidQN:          "DDP/2/0x01 (invalid QN)",
		TermDDPNoBuffer:           "DDP/2/0x02 (invalid MSN: no buffer available)",
		TermDDPMSNRange:           "DDP/2/0x03 (invalid MSN: MSN out of range)",
		TermDDPInvalidMO:          "DDP/2/0x04 (invalid MO)",
		TermDDPTooLong:            "DDP/2/0x05 (DDP message too long for the available buffer)",
		TermDDPUntaggedVersion:    "DDP/2/0x06 (invalid DDP version)",
		TermLLPConnLost:           "LLP/0/0x01 (TCP connection closed, terminated or lost)",
		TermLLPCRC:                "LLP/0/0x02 (received MPA CRC does not match)",
		TermLLPMarker:             "LLP/0/0x03 (marker and ULPDU_Length / FPDU start mismatch)",
		TermLLPInvalidFrame:       "LLP/0/0x04 (invalid MPA Request or Reply frame)",
		TermLLPCatastrophic:       "LLP/0/0x05 (local catastrophic error)",
		TermLLPInsufficientIRD:    "LLP/0/0x06 (insufficient IRD resources)",
		TermLLPNoRTRModel:         "LLP/0/0x07 (no matching RTR model)",
	}
	all := AllTermCodes()
	if len(all) != len(want) {
		t.Errorf("AllTermCodes has %d codes, the tables %d", len(all), len(want))
	}
	for _, c := range all {
		w, ok := want[c]
		if !ok {
			t.Errorf("unexpected code %v", c)
			continue
		}
		if got := c.String(); got != w {
			t.Errorf("String() = %q, want %q", got, w)
		}
		if !c.Known() || c.Name() == "unknown code" {
			t.Errorf("%v not known", c)
		}
	}
	for _, c := range []TermCode{MakeTermCode(LayerLLP, 1, 0x02), MakeTermCode(3, 0, 0), MakeTermCode(LayerRDMAP, 2, 0x02), MakeTermCode(LayerDDP, 0, 0x01)} {
		if c.Known() || c.Name() != "unknown code" {
			t.Errorf("%v reported as known", c)
		}
	}
}

func TestTermCodeTypeNames(t *testing.T) {
	for c, want := range map[TermCode]string{
		TermRDMAPCatastrophic:        "local catastrophic",
		TermRDMAPInvalidSTag:         "remote protection",
		TermRDMAPInvalidVersion:      "remote operation",
		TermDDPCatastrophic:          "local catastrophic",
		TermDDPTOWrap:                "tagged buffer",
		TermDDPInvalidQN:             "untagged buffer",
		TermLLPCRC:                   "MPA",
		MakeTermCode(LayerLLP, 3, 0): "type 3",
		MakeTermCode(7, 0, 0):        "type 0",
	} {
		if got := c.TypeName(); got != want {
			t.Errorf("%v.TypeName() = %q, want %q", c, got, want)
		}
	}
	if TermLayer(5).String() != "layer 5" {
		t.Errorf("TermLayer(5) = %q", TermLayer(5))
	}
}
