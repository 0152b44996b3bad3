package wire

import (
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/rdma"
)

// The table, row by row, against docs/spec/rdmap.md §2 and extensions.md.
func TestOpcodeTable(t *testing.T) {
	tests := []struct {
		op      Opcode
		min     uint8
		tagged  bool
		qn      uint32
		header  HeaderKind
		hdrLen  int
		single  bool
		payload bool
		immLast bool
		inv, se bool
	}{
		{OpWrite, 1, true, 0, HeaderNone, 0, false, true, false, false, false},
		{OpReadRequest, 1, false, 1, HeaderReadRequest, 28, true, false, false, false, false},
		{OpReadResponse, 1, true, 0, HeaderNone, 0, false, true, false, false, false},
		{OpSend, 1, false, 0, HeaderNone, 0, false, true, false, false, false},
		{OpSendInv, 1, false, 0, HeaderNone, 0, false, true, false, true, false},
		{OpSendSE, 1, false, 0, HeaderNone, 0, false, true, false, false, true},
		{OpSendSEInv, 1, false, 0, HeaderNone, 0, false, true, false, true, true},
		{OpTerminate, 1, false, 2, HeaderTerminate, 4, true, false, false, false, false},
		{OpImmediate, 1, false, 0, HeaderImmediate, 8, true, false, false, false, false},
		{OpImmediateSE, 1, false, 0, HeaderImmediate, 8, true, false, false, false, true},
		{OpAtomicRequest, 1, false, 1, HeaderAtomicRequest, 52, true, false, false, false, false},
		{OpAtomicResponse, 1, false, 3, HeaderAtomicResponse, 12, true, false, false, false, false},
		{OpReadV2Request, 2, false, 1, HeaderReadV2Request, 16, true, false, false, false, false},
		{OpReadV2Response, 2, false, 3, HeaderNone, 0, false, true, false, false, false},
		{OpSendImm, 2, false, 0, HeaderNone, 0, false, true, true, false, false},
		{OpSendInvImm, 2, false, 0, HeaderNone, 0, false, true, true, true, false},
		{OpSendSEImm, 2, false, 0, HeaderNone, 0, false, true, true, false, true},
		{OpSendSEInvImm, 2, false, 0, HeaderNone, 0, false, true, true, true, true},
	}
	for _, tc := range tests {
		want := OpInfo{Opcode: tc.op, MinVersion: tc.min, Tagged: tc.tagged, QN: tc.qn, Header: tc.header,
			HeaderLen: tc.hdrLen, SingleSegment: tc.single, Payload: tc.payload, ImmediateLast: tc.immLast,
			Invalidate: tc.inv, Solicited: tc.se}
		for rv := uint8(0); rv < 4; rv++ {
			got, ok := LookupOpcode(rv, tc.op)
			defined := rv == RDMAPVersion2 || (rv == RDMAPVersion1 && tc.min == 1)
			if ok != defined {
				t.Errorf("LookupOpcode(%d, %v) ok = %v, want %v", rv, tc.op, ok, defined)
			}
			if ok && got != want {
				t.Errorf("LookupOpcode(%d, %v) = %+v, want %+v", rv, tc.op, got, want)
			}
		}
	}
	for _, op := range []Opcode{0xC, 0xF, 0x10, 0x17, 0x1F, 0xFF} {
		if _, ok := LookupOpcode(RDMAPVersion2, op); ok {
			t.Errorf("opcode %v defined under RV 2", op)
		}
	}
}

func TestValidateDDPHeader(t *testing.T) {
	send := untagged(true, MakeRDMAPControl(1, OpSend), QNSend, 1, 0)
	tests := []struct {
		name string
		h    DDPHeader
		rv   uint8
		err  error
	}{
		{"Send", send, 1, nil},
		{"Write", tagged(true, 0x40, 1, 0), 1, nil},
		{"Read Request", untagged(true, 0x41, QNReadReq, 1, 0), 1, nil},
		{"Terminate", untagged(true, 0x47, QNTerminate, 1, 0), 1, nil},
		{"Atomic Response", untagged(true, 0x4b, QNResponse, 1, 0), 1, nil},
		{"V2 Read V2 Response", untagged(true, 0x92, QNResponse, 1, 0), 2, nil},
		// 1. DDP version, before anything else, by the T bit.
		{"DV 0 untagged, bad everything", DDPHeader{Version: 0, Control: 0xFF, QN: 9}, 1, ErrDDPUntaggedVersion},
		{"DV 2 tagged, bad everything", DDPHeader{Tagged: true, Version: 2, Control: 0xFF}, 1, ErrDDPTaggedVersion},
		// 2. RDMAP version against the negotiated one.
		{"RV 2 when 1 negotiated", untagged(true, 0x83, 0, 1, 0), 1, ErrInvalidRDMAPVersion},
		{"RV 1 when 2 negotiated", send, 2, ErrInvalidRDMAPVersion},
		{"RV 0, bad opcode", untagged(true, 0x0F, 9, 1, 0), 1, ErrInvalidRDMAPVersion},
		{"RV 3", untagged(true, 0xC3, 0, 1, 0), 1, ErrInvalidRDMAPVersion},
		// 3. opcode defined for the version.
		{"opcode 0xC", untagged(true, 0x4C, 9, 1, 0), 1, ErrUnexpectedOpcode},
		{"opcode 0xF tagged", tagged(true, 0x4F, 1, 0), 1, ErrUnexpectedOpcode},
		{"opcode 0x17 under RV 2", untagged(true, 0x97, 0, 1, 0), 2, ErrUnexpectedOpcode},
		{"opcode 0x0C under RV 2", untagged(true, 0x8C, 0, 1, 0), 2, ErrUnexpectedOpcode},
		// 4. buffer model.
		{"tagged Send", tagged(true, 0x43, 1, 0), 1, ErrOpcodeModel},
		{"untagged Write", untagged(true, 0x40, 0, 1, 0), 1, ErrOpcodeModel},
		// 5. QN.
		{"Send on QN 1", untagged(true, 0x43, 1, 1, 0), 1, ErrInvalidQN},
		{"Read Request on QN 7", untagged(true, 0x41, 7, 1, 0), 1, ErrInvalidQN},
		{"Atomic Request on QN 3", untagged(true, 0x4a, 3, 1, 0), 1, ErrInvalidQN},
		{"Read V2 Response on QN 1", untagged(true, 0x92, 1, 1, 0), 2, ErrInvalidQN},
		// RV 1: bit 0x10 is reserved and ignored, so 0x53 is a Send and
		// 0x51 (a V2 Read V2 Request sent with RV 1) a Read Request.
		{"RV 1 control 0x53 is Send", untagged(true, 0x53, QNSend, 1, 0), 1, nil},
		{"RV 1 control 0x51 is Read Request on QN 1", untagged(true, 0x51, QNReadReq, 1, 0), 1, nil},
		{"RV 1 control 0x5C is opcode 0xC", untagged(true, 0x5C, 0, 1, 0), 1, ErrUnexpectedOpcode},
		// RV 2: the reserved bit is 0x20.
		{"RV 2 control 0xA3 is Send", untagged(true, 0xA3, QNSend, 1, 0), 2, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ValidateDDPHeader(&tc.h, tc.rv)
			if err != tc.err { // the predeclared value itself
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err == nil && info.Opcode != tc.h.Control.Opcode() {
				t.Errorf("info for %v, want %v", info.Opcode, tc.h.Control.Opcode())
			}
		})
	}
}

// The codes ValidateDDPHeader reports are those of ddp.md §3, rdmap.md §4.
func TestValidationCodes(t *testing.T) {
	for _, tc := range []struct {
		err  *ProtocolError
		code rdma.TermCode
	}{
		{ErrDDPTaggedVersion, rdma.MakeTermCode(rdma.LayerDDP, 1, 0x04)},
		{ErrDDPUntaggedVersion, rdma.MakeTermCode(rdma.LayerDDP, 2, 0x06)},
		{ErrInvalidRDMAPVersion, rdma.MakeTermCode(rdma.LayerRDMAP, 2, 0x05)},
		{ErrUnexpectedOpcode, rdma.MakeTermCode(rdma.LayerRDMAP, 2, 0x06)},
		{ErrOpcodeModel, rdma.MakeTermCode(rdma.LayerRDMAP, 2, 0x06)},
		{ErrInvalidQN, rdma.MakeTermCode(rdma.LayerDDP, 2, 0x01)},
		{ErrUnknownAOpCode, rdma.MakeTermCode(rdma.LayerRDMAP, 2, 0x06)},
		{ErrImmediateLength, rdma.MakeTermCode(rdma.LayerRDMAP, 2, 0xFF)},
	} {
		if tc.err.Code != tc.code {
			t.Errorf("%q carries %v, want %v", tc.err.What, tc.err.Code, tc.code)
		}
		var pe *ProtocolError
		if !errors.As(error(tc.err), &pe) || pe != tc.err {
			t.Errorf("%q: errors.As failed", tc.err.What)
		}
	}
}
