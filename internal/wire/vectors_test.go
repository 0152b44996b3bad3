package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/vectors"
	"github.com/goiwarp/iwarp/rdma"
)

// The vectors are read from the project's shared vector files
// (internal/vectors/testdata, see its README.md): each hex column is a whole
// FPDU: ULPDU_Length, ULPDU, pad, CRC32c little-endian.
const vectorDir = "../vectors/testdata/"

func loadVectors(t testing.TB, file string) []vectors.Frame {
	t.Helper()
	fs, err := vectors.ReadFile(vectorDir + file)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// splitFPDU returns the ULPDU of a whole FPDU and checks its pad and CRC.
func splitFPDU(t *testing.T, name string, frame []byte) []byte {
	t.Helper()
	if len(frame) < 2 {
		t.Fatalf("%s: frame too short", name)
	}
	n := int(binary.BigEndian.Uint16(frame))
	pad := (4 - (2+n)%4) % 4
	if len(frame) != 2+n+pad+4 {
		t.Fatalf("%s: frame is %d bytes, ULPDU_Length %d wants %d", name, len(frame), n, 2+n+pad+4)
	}
	crc := binary.LittleEndian.Uint32(frame[2+n+pad:])
	if got := crc32.Checksum(frame[:2+n+pad], castagnoli); got != crc {
		t.Errorf("%s: CRC32c %08x, trailer says %08x", name, got, crc)
	}
	return frame[2 : 2+n]
}

// buildFPDU frames a ULPDU: ULPDU_Length, ULPDU, zero pad, CRC32c (LE).
func buildFPDU(ulpdu []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(ulpdu)))
	b = append(b, ulpdu...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

func seq(from, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(from + i)
	}
	return b
}

func untagged(last bool, ctl RDMAPControl, qn, msn, mo uint32) DDPHeader {
	return DDPHeader{Last: last, Version: 1, Control: ctl, QN: qn, MSN: msn, MO: mo}
}

func tagged(last bool, ctl RDMAPControl, stag uint32, to uint64) DDPHeader {
	return DDPHeader{Tagged: true, Last: last, Version: 1, Control: ctl, STag: stag, TO: to}
}

const ones = ^uint64(0)

// wantFPDUs spells out the fields of every non-MPA row of fpdus.tsv, from
// its meaning column.
var wantFPDUs = map[string]ULPDU{
	"send-msn1": {DDP: untagged(true, 0x43, 0, 1, 0), Opcode: OpSend,
		Payload: []byte("hello, iWARP!")},
	"send-msn2-seg1": {DDP: untagged(false, 0x43, 0, 2, 0), Opcode: OpSend,
		Payload: bytes.Repeat([]byte("AB"), 12)},
	"send-msn2-seg2": {DDP: untagged(true, 0x43, 0, 2, 24), Opcode: OpSend,
		Payload: bytes.Repeat([]byte("AB"), 8)},
	"write-1000": {DDP: tagged(true, 0x40, 0x11223344, 0x100000000), Opcode: OpWrite,
		Payload: seq(0, 1000)},
	"read-request": {DDP: untagged(true, 0x41, 1, 1, 0), Opcode: OpReadRequest,
		Header: HeaderReadRequest, ReadRequest: ReadRequest{
			SinkSTag: 0xaabbccdd, SinkTO: 0x0102030405060708, Size: 64,
			SrcSTag: 0x55667788, SrcTO: 0x1112131415161718}},
	"atomic-request-cmpswap": {DDP: untagged(true, 0x4a, 1, 2, 0), Opcode: OpAtomicRequest,
		Header: HeaderAtomicRequest, AtomicRequest: AtomicRequest{
			AOpCode: AOpCmpSwap, RequestID: 0xbeef, STag: 0x99aabbcc, TO: 0x1000,
			AddSwapData: 0x1111111111111111, AddSwapMask: ones,
			CompareData: 0x2222222222222222, CompareMask: ones}},
	"atomic-request-fetchadd": {DDP: untagged(true, 0x4a, 1, 3, 0), Opcode: OpAtomicRequest,
		Header: HeaderAtomicRequest, AtomicRequest: AtomicRequest{
			AOpCode: AOpFetchAdd, RequestID: 0xbef0, STag: 0x99aabbcc, TO: 0x1008,
			AddSwapData: 5, AddSwapMask: 0, CompareData: 0, CompareMask: ones}},
	"immediate-data": {DDP: untagged(true, 0x48, 0, 3, 0), Opcode: OpImmediate,
		Header: HeaderImmediate, Immediate: ImmediateData{0xc0, 0xff, 0xee, 0x00, 0x01, 0x02, 0x03, 0x04}},
	"immediate-data-se": {DDP: untagged(true, 0x49, 0, 4, 0), Opcode: OpImmediateSE,
		Header: HeaderImmediate, Immediate: ImmediateFromUint64(0x0102030405060708)},
	"read-response": {DDP: tagged(true, 0x42, 0xaabbccdd, 0x0102030405060708), Opcode: OpReadResponse,
		Payload: bytes.Repeat([]byte{0x5a}, 64)},
	"atomic-response-1": {DDP: untagged(true, 0x4b, 3, 1, 0), Opcode: OpAtomicResponse,
		Header: HeaderAtomicResponse, AtomicResponse: AtomicResponse{RequestID: 0xbeef, OriginalValue: 0x2222222222222222}},
	"atomic-response-2": {DDP: untagged(true, 0x4b, 3, 2, 0), Opcode: OpAtomicResponse,
		Header: HeaderAtomicResponse, AtomicResponse: AtomicResponse{RequestID: 0xbef0, OriginalValue: 0x2a}},
	"terminate-ddp-invalid-qn": {DDP: untagged(true, 0x47, 2, 1, 0), Opcode: OpTerminate,
		Header: HeaderTerminate, Terminate: Terminate{
			Code: rdma.TermDDPInvalidQN, M: true, D: true, R: true,
			SegLenPresent: true, DDPSegLen: 46,
			// The offending Read Request's DDP header, sent on QN 7.
			DDPHeader:  mustHex("41 41 00000000 00000007 00000001 00000000"),
			RDMAHeader: mustHex("aabbccdd 0102030405060708 00000040 55667788 1112131415161718"),
			Layout:     LayoutRFC, Control: [4]byte{0x12, 0x01, 0xe0, 0x00}}},
}

// wantV2 spells out the fields of every non-MPA row of v2.tsv.
var wantV2 = map[string]ULPDU{
	"v2-write": {DDP: tagged(true, 0x80, 0x1000, 0), Opcode: OpWrite,
		Payload: []byte("v2-write")},
	"v2-send-imm-seg1": {DDP: untagged(false, 0x93, 0, 1, 0), Opcode: OpSendImm,
		Payload: []byte("hello!")},
	"v2-send-imm-last": {DDP: untagged(true, 0x93, 0, 1, 6), Opcode: OpSendImm,
		Header: HeaderImmediate, Immediate: ImmediateFromUint64(0x1122334455667788)},
	"v2-send-imm-empty": {DDP: untagged(true, 0x93, 0, 2, 0), Opcode: OpSendImm,
		Header: HeaderImmediate, Immediate: ImmediateFromUint64(0xdeadbeef)},
	"v2-send-inv-se-imm": {DDP: DDPHeader{Last: true, Version: 1, Control: 0x96, InvSTag: 0x00abcd01, QN: 0, MSN: 3},
		Opcode: OpSendSEInvImm, Header: HeaderImmediate, Immediate: ImmediateFromUint64(7)},
	"v2-read-request": {DDP: untagged(true, 0x91, 1, 1, 0), Opcode: OpReadV2Request,
		Header: HeaderReadV2Request, ReadV2Request: ReadV2Request{Size: 16, SrcSTag: 0x2000, SrcTO: 0x40}},
	"v2-atomic-request": {DDP: untagged(true, 0x8a, 1, 2, 0), Opcode: OpAtomicRequest,
		Header: HeaderAtomicRequest, AtomicRequest: AtomicRequest{
			AOpCode: AOpFetchAdd, RequestID: 1, STag: 0x2000, TO: 0x80,
			AddSwapData: 1, AddSwapMask: 0, CompareData: 0, CompareMask: ones}},
	"v2-read-response-seg1": {DDP: untagged(false, 0x92, 3, 1, 0), Opcode: OpReadV2Response,
		Payload: seq(0, 8)},
	"v2-read-response-seg2": {DDP: untagged(true, 0x92, 3, 1, 8), Opcode: OpReadV2Response,
		Payload: seq(8, 8)},
	"v2-atomic-response": {DDP: untagged(true, 0x8b, 3, 2, 0), Opcode: OpAtomicResponse,
		Header: HeaderAtomicResponse, AtomicResponse: AtomicResponse{RequestID: 1, OriginalValue: 41}},
}

// normalize makes empty views compare equal to nil.
func normalize(u ULPDU) ULPDU {
	if len(u.Payload) == 0 {
		u.Payload = nil
	}
	if len(u.Terminate.DDPHeader) == 0 {
		u.Terminate.DDPHeader = nil
	}
	if len(u.Terminate.RDMAHeader) == 0 {
		u.Terminate.RDMAHeader = nil
	}
	return u
}

func checkVectorFile(t *testing.T, file string, rv uint8, want map[string]ULPDU) {
	seen := 0
	for _, row := range loadVectors(t, file) {
		if row.MPA() {
			continue // MPA startup frames belong to package mpa
		}
		seen++
		t.Run(row.Name, func(t *testing.T) {
			w, ok := want[row.Name]
			if !ok {
				t.Fatalf("no expected fields for %s (%s)", row.Name, row.Meaning)
			}
			ulpdu := splitFPDU(t, row.Name, row.Bytes)
			u, err := ParseULPDU(ulpdu)
			if err != nil {
				t.Fatalf("ParseULPDU: %v", err)
			}
			if got := normalize(u); !reflect.DeepEqual(got, normalize(w)) {
				t.Errorf("decoded\n got %+v\nwant %+v\n(%s)", got, w, row.Meaning)
			}
			if _, err := ValidateDDPHeader(&u.DDP, rv); err != nil {
				t.Errorf("ValidateDDPHeader(RV %d): %v", rv, err)
			}
			enc := AppendULPDU(nil, &u)
			if !bytes.Equal(enc, ulpdu) {
				t.Errorf("re-encoded ULPDU differs\n got %x\nwant %x", enc, ulpdu)
			}
			if fr := buildFPDU(enc); !bytes.Equal(fr, row.Bytes) {
				t.Errorf("re-framed FPDU differs\n got %x\nwant %x", fr, row.Bytes)
			}
		})
	}
	if seen != len(want) {
		t.Errorf("%s: %d FPDU rows, %d expectations", file, seen, len(want))
	}
}

func TestVectorsFPDUs(t *testing.T) { checkVectorFile(t, "fpdus.tsv", RDMAPVersion1, wantFPDUs) }

func TestVectorsV2(t *testing.T) { checkVectorFile(t, "v2.tsv", RDMAPVersion2, wantV2) }

// TestVectorsTruncated checks that every proper prefix of every vector
// ULPDU fails to parse, cleanly.
func TestVectorsTruncated(t *testing.T) {
	for _, file := range []string{"fpdus.tsv", "v2.tsv"} {
		for _, row := range loadVectors(t, file) {
			if row.MPA() {
				continue
			}
			ulpdu := splitFPDU(t, row.Name, row.Bytes)
			u, err := ParseULPDU(ulpdu)
			if err != nil {
				t.Fatal(err)
			}
			// A message with payload (or the L=0 segment of a V2 Send
			// with Immediate) is legal at any length past its headers.
			info, _ := LookupOpcode(u.DDP.Control.Version(), u.Opcode)
			minLen := u.DDP.Len() + info.HeaderLen
			if !info.Payload || (info.ImmediateLast && u.DDP.Last) {
				minLen = len(ulpdu)
			}
			for n := range minLen {
				if u.Header == HeaderTerminate && validTermPrefix(n-UntaggedHdrLen) {
					continue // a shorter Terminate, with fewer headers attached
				}
				if _, err := ParseULPDU(ulpdu[:n]); err == nil {
					t.Errorf("%s: %d-byte prefix parsed without error", row.Name, n)
				}
			}
		}
	}
}

// validTermPrefix reports whether a Terminate header of n bytes is well
// formed when the one it was cut from attaches an untagged DDP header:
// control only, control and DDP Segment Length, or those and the DDP header.
func validTermPrefix(n int) bool {
	return n == TermControlLen || n == TermControlLen+TermSegLenLen ||
		n == TermControlLen+TermSegLenLen+UntaggedHdrLen
}
