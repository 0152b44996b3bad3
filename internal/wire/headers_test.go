package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/rdma"
)

// Golden headers, annotated. The Read Request, Atomic and Read V2 bytes are
// the RDMAP headers of rows of internal/vectors/testdata/fpdus.tsv and v2.tsv.

var readRequestGolden = annotatedHex(`
	aabbccdd         Data Sink STag
	0102030405060708 Data Sink TO
	00000040         RDMARDSZ 64
	55667788         Data Source STag
	1112131415161718 Data Source TO`)

var readV2RequestGolden = annotatedHex(`
	00000010         RDMARDSZ 16
	00002000         Data Source STag
	0000000000000040 Data Source TO`)

var atomicCmpSwapGolden = annotatedHex(`
	00000002         reserved 0, AOpCode 2 CmpSwap
	0000beef         Request Identifier
	99aabbcc         Remote STag
	0000000000001000 Remote TO
	1111111111111111 Swap Data
	ffffffffffffffff Swap Mask
	2222222222222222 Compare Data
	ffffffffffffffff Compare Mask`)

var atomicResponseGolden = annotatedHex(`
	0000beef         Original Request Identifier
	2222222222222222 Original Remote Data Value`)

// annotatedHex decodes golden bytes written one field a line: the first
// word of each line is hex, the rest of the line is its annotation.
func annotatedHex(s string) []byte {
	var b []byte
	for _, line := range strings.Split(s, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			b = append(b, mustHex(f[0])...)
		}
	}
	return b
}

func TestReadRequestGolden(t *testing.T) {
	want := ReadRequest{SinkSTag: 0xaabbccdd, SinkTO: 0x0102030405060708, Size: 64, SrcSTag: 0x55667788, SrcTO: 0x1112131415161718}
	got, err := ParseReadRequest(readRequestGolden)
	if err != nil || got != want {
		t.Fatalf("ParseReadRequest = %+v, %v; want %+v", got, err, want)
	}
	if enc := AppendReadRequest(nil, &got); !bytes.Equal(enc, readRequestGolden) {
		t.Errorf("AppendReadRequest = %x", enc)
	}
	for n := range ReadRequestLen {
		if _, err := ParseReadRequest(readRequestGolden[:n]); !errors.Is(err, ErrShortRDMAPHeader) {
			t.Errorf("%d bytes: err %v", n, err)
		}
	}
}

func TestReadV2RequestGolden(t *testing.T) {
	want := ReadV2Request{Size: 16, SrcSTag: 0x2000, SrcTO: 0x40}
	got, err := ParseReadV2Request(readV2RequestGolden)
	if err != nil || got != want {
		t.Fatalf("ParseReadV2Request = %+v, %v; want %+v", got, err, want)
	}
	if enc := AppendReadV2Request(nil, &got); !bytes.Equal(enc, readV2RequestGolden) {
		t.Errorf("AppendReadV2Request = %x", enc)
	}
	for n := range ReadV2RequestLen {
		if _, err := ParseReadV2Request(readV2RequestGolden[:n]); !errors.Is(err, ErrShortRDMAPHeader) {
			t.Errorf("%d bytes: err %v", n, err)
		}
	}
}

func TestAtomicRequestGolden(t *testing.T) {
	want := AtomicRequest{AOpCode: AOpCmpSwap, RequestID: 0xbeef, STag: 0x99aabbcc, TO: 0x1000,
		AddSwapData: 0x1111111111111111, AddSwapMask: ones, CompareData: 0x2222222222222222, CompareMask: ones}
	got, err := ParseAtomicRequest(atomicCmpSwapGolden)
	if err != nil || got != want {
		t.Fatalf("ParseAtomicRequest = %+v, %v; want %+v", got, err, want)
	}
	if enc := AppendAtomicRequest(nil, &got); !bytes.Equal(enc, atomicCmpSwapGolden) {
		t.Errorf("AppendAtomicRequest = %x", enc)
	}
	for n := range AtomicRequestLen {
		if _, err := ParseAtomicRequest(atomicCmpSwapGolden[:n]); !errors.Is(err, ErrShortRDMAPHeader) {
			t.Errorf("%d bytes: err %v", n, err)
		}
	}
}

// An unknown AOpCode is reported with RDMAP/2/0x06 but every field is
// still decoded; reserved bits are ignored and kept.
func TestAtomicRequestUnknownAOpCode(t *testing.T) {
	for _, op := range []byte{0x1, 0x3, 0xF} {
		b := bytes.Clone(atomicCmpSwapGolden)
		b[3] = 0xA0 | op // reserved bits set as well
		got, err := ParseAtomicRequest(b)
		if !errors.Is(err, ErrUnknownAOpCode) || ErrUnknownAOpCode.Code != rdma.TermRDMAPUnexpectedOpcode {
			t.Errorf("AOpCode %d: err %v", op, err)
		}
		if got.AOpCode != AOpCode(op) || got.Reserved != 0xA || got.RequestID != 0xbeef || got.CompareMask != ones {
			t.Errorf("AOpCode %d: fields not decoded: %+v", op, got)
		}
		if enc := AppendAtomicRequest(nil, &got); !bytes.Equal(enc, b) {
			t.Errorf("AOpCode %d: re-encoded %x, want %x", op, enc, b)
		}
	}
	// Reserved bits with a known AOpCode: no error.
	b := bytes.Clone(atomicCmpSwapGolden)
	b[0] = 0x80
	if got, err := ParseAtomicRequest(b); err != nil || got.AOpCode != AOpCmpSwap || got.Reserved != 0x8000000 {
		t.Errorf("reserved bits: %+v, %v", got, err)
	}
}

func TestAtomicResponseGolden(t *testing.T) {
	want := AtomicResponse{RequestID: 0xbeef, OriginalValue: 0x2222222222222222}
	got, err := ParseAtomicResponse(atomicResponseGolden)
	if err != nil || got != want {
		t.Fatalf("ParseAtomicResponse = %+v, %v; want %+v", got, err, want)
	}
	if enc := AppendAtomicResponse(nil, &got); !bytes.Equal(enc, atomicResponseGolden) {
		t.Errorf("AppendAtomicResponse = %x", enc)
	}
	for n := range AtomicResponseLen {
		if _, err := ParseAtomicResponse(atomicResponseGolden[:n]); !errors.Is(err, ErrShortRDMAPHeader) {
			t.Errorf("%d bytes: err %v", n, err)
		}
	}
}

func TestAOpCodeString(t *testing.T) {
	for op, want := range map[AOpCode]string{AOpFetchAdd: "FetchAdd", AOpCmpSwap: "CmpSwap", 1: "AOpCode 0x1", 0xF: "AOpCode 0xF"} {
		if got := op.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", op, got, want)
		}
		if op.Known() != (op == AOpFetchAdd || op == AOpCmpSwap) {
			t.Errorf("%d.Known() = %v", op, op.Known())
		}
	}
}

func TestImmediateData(t *testing.T) {
	b := mustHex("c0ffee0001020304")
	d, err := ParseImmediateData(b)
	if err != nil || d.String() != "c0ffee0001020304" || d.Uint64() != 0xc0ffee0001020304 {
		t.Fatalf("ParseImmediateData = %v, %v", d, err)
	}
	if ImmediateFromUint64(0xc0ffee0001020304) != d {
		t.Error("ImmediateFromUint64 disagrees with Uint64")
	}
	if enc := AppendImmediateData([]byte{1}, d); !bytes.Equal(enc, append([]byte{1}, b...)) {
		t.Errorf("AppendImmediateData = %x", enc)
	}
	for _, n := range []int{0, 1, 7, 9, 16} {
		_, err := ParseImmediateData(make([]byte, n))
		if !errors.Is(err, ErrImmediateLength) || ErrImmediateLength.Code != rdma.TermRDMAPOpUnspecified {
			t.Errorf("%d bytes: err %v", n, err)
		}
	}
}

// Every truncated prefix of a DDP header fails.
func TestDDPHeaderTruncated(t *testing.T) {
	for _, b := range [][]byte{
		mustHex("c1 40 11223344 0000000100000000"),
		mustHex("41 43 00000000 00000000 00000001 00000000"),
	} {
		h, n, err := ParseDDPHeader(b)
		if err != nil || n != len(b) || h.Len() != n {
			t.Fatalf("ParseDDPHeader(%x) = %d, %v", b, n, err)
		}
		for i := range len(b) {
			if _, n, err := ParseDDPHeader(b[:i]); !errors.Is(err, ErrShortDDPHeader) || n != 0 {
				t.Errorf("%d of %d bytes: n %d err %v", i, len(b), n, err)
			}
		}
	}
}

func TestHeaderKindString(t *testing.T) {
	if HeaderAtomicRequest.String() != "Atomic Request" || HeaderKind(99).String() != "unknown header" {
		t.Errorf("HeaderKind names: %q %q", HeaderAtomicRequest, HeaderKind(99))
	}
}
