package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/rdma"
)

// The siw Terminate Control fields of docs/spec/interop.md ("siw's
// Terminate control field is not RFC-encoded"), and the RFC encodings of
// the same codes.
func TestTerminateControlLayouts(t *testing.T) {
	tests := []struct {
		name    string
		control string
		code    rdma.TermCode
		m, d, r bool
		layout  TermLayout
		amb     bool
	}{
		// interop.md: CRC error from siw.
		{"siw LLP/0/0x02", "02 02 00 00", rdma.TermLLPCRC, false, false, false, LayoutSiw, false},
		// interop.md: invalid DDP version on an untagged segment.
		{"siw DDP/2/0x06", "21 06 00 00", rdma.TermDDPUntaggedVersion, false, false, false, LayoutSiw, false},
		// interop.md: Read Request with an invalid source STag, M D R.
		{"siw RDMAP/1/0x00 MDR", "10 00 07 00", rdma.TermRDMAPInvalidSTag, true, true, true, LayoutSiw, false},
		// interop/captures/siw_mpa_request.hex: a P2P siw refusing a
		// Reply without the P2P bits.
		{"siw LLP/0/0x07", "02 07 00 00", rdma.TermLLPNoRTRModel, false, false, false, LayoutSiw, true},
		// siw's M D without R (DDP errors).
		{"siw DDP/1/0x01 MD", "11 01 03 00", rdma.TermDDPBaseBounds, true, true, false, LayoutSiw, false},
		{"RFC LLP/0/0x02", "20 02 00 00", rdma.TermLLPCRC, false, false, false, LayoutRFC, false},
		{"RFC DDP/2/0x06", "12 06 00 00", rdma.TermDDPUntaggedVersion, false, false, false, LayoutRFC, false},
		{"RFC RDMAP/1/0x00 MDR", "01 00 e0 00", rdma.TermRDMAPInvalidSTag, true, true, true, LayoutRFC, false},
		{"RFC DDP/2/0x01 MDR", "12 01 e0 00", rdma.TermDDPInvalidQN, true, true, true, LayoutRFC, false},
		{"RFC DDP/1/0x01 MD", "11 01 c0 00", rdma.TermDDPBaseBounds, true, true, false, LayoutRFC, false},
		// The same code both ways.
		{"symmetric RDMAP/0", "00 00 00 00", rdma.TermRDMAPCatastrophic, false, false, false, LayoutRFC, false},
		{"symmetric DDP/1", "11 04 00 00", rdma.TermDDPTaggedVersion, false, false, false, LayoutRFC, false},
		// Known as RFC only, reserved bits set: still RFC.
		{"RFC with reserved", "12 01 e0 01", rdma.TermDDPInvalidQN, true, true, true, LayoutRFC, false},
		// Known as siw only, with siw-reserved bits set: siw.
		{"siw with reserved", "21 06 80 00", rdma.TermDDPUntaggedVersion, false, false, false, LayoutSiw, false},
		// Known both ways with different meanings (see decodeTermControl):
		// siw's reading when siw sends that code bare, else RFC's.
		{"siw RDMAP/2/0x05 (RV=2 answer)", "20 05 00 00", rdma.TermRDMAPInvalidVersion, false, false, false, LayoutSiw, true},
		{"siw RDMAP/2/0x06 (opcode answer)", "20 06 00 00", rdma.TermRDMAPUnexpectedOpcode, false, false, false, LayoutSiw, true},
		{"siw LLP/0/0x06", "02 06 00 00", rdma.TermLLPInsufficientIRD, false, false, false, LayoutSiw, true},
		{"RFC RDMAP/2/0x05", "02 05 00 00", rdma.TermRDMAPInvalidVersion, false, false, false, LayoutRFC, true},
		{"RFC LLP/0/0x07", "20 07 00 00", rdma.TermLLPNoRTRModel, false, false, false, LayoutRFC, true},
		{"RFC RDMAP/1/0x00 bare", "01 00 00 00", rdma.TermRDMAPInvalidSTag, false, false, false, LayoutRFC, true},
		{"RFC DDP/0/0x00 bare", "10 00 00 00", rdma.TermDDPCatastrophic, false, false, false, LayoutRFC, true},
		// With flags attached the RFC reading is unambiguous.
		{"RFC RDMAP/2/0x06 MD", "02 06 c0 00", rdma.TermRDMAPUnexpectedOpcode, true, true, false, LayoutRFC, false},
		// Known neither way: reported as read the RFC way.
		{"unknown", "35 77 00 00", rdma.MakeTermCode(3, 5, 0x77), false, false, false, LayoutRFC, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustHex(tc.control)
			term, err := ParseTerminate(b)
			if err != nil {
				t.Fatalf("ParseTerminate: %v", err)
			}
			if term.Code != tc.code || term.M != tc.m || term.D != tc.d || term.R != tc.r ||
				term.Layout != tc.layout || term.Ambiguous != tc.amb {
				t.Errorf("got %v M=%v D=%v R=%v layout %v ambiguous %v, want %v M=%v D=%v R=%v layout %v ambiguous %v",
					term.Code, term.M, term.D, term.R, term.Layout, term.Ambiguous,
					tc.code, tc.m, tc.d, tc.r, tc.layout, tc.amb)
			}
			if tc.amb {
				other := LayoutRFC
				if term.Layout == LayoutRFC {
					other = LayoutSiw
				}
				if alt := DecodeTermControl(term.Control, other); alt.Code == term.Code || !alt.Code.Known() {
					t.Errorf("ambiguous, but the %v reading is %v", other, alt.Code)
				}
			}
			if !bytes.Equal(term.Control[:], b) {
				t.Errorf("Control %x, want the raw bytes %x", term.Control, b)
			}
			if term.SegLenPresent || term.DDPHeader != nil || term.RDMAHeader != nil {
				t.Errorf("control-only Terminate decoded attachments: %+v", term)
			}
			// Re-encoding in the RFC layout reads back the same meaning.
			enc := AppendTerminate(nil, &term)
			rfc := DecodeTermControl([4]byte(enc), LayoutRFC)
			if rfc.Code != term.Code || rfc.M != term.M || rfc.D != term.D || rfc.R != term.R || rfc.Reserved {
				t.Errorf("RFC re-encoding %x reads as %+v, want %v", enc, rfc, term.Code)
			}
			again, err := ParseTerminate(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !again.Ambiguous && (again.Code != term.Code || again.Layout != LayoutRFC) {
				t.Errorf("RFC re-encoding %x parses as %v (%v), want %v", enc, again.Code, again.Layout, term.Code)
			}
		})
	}
}

// A whole siw Terminate FPDU from interop/captures/siw_mpa_request.hex
// (siw built with P2P, answered without the P2P bits; no CRC, so the
// trailer is zero).
func TestTerminateSiwCapture(t *testing.T) {
	fpdu := mustHex("0016 4147 00000000 00000002 00000001 00000000 02070000 00000000")
	u, err := ParseULPDU(fpdu[2 : 2+0x16])
	if err != nil {
		t.Fatal(err)
	}
	if u.Header != HeaderTerminate || u.DDP.QN != QNTerminate || u.DDP.MSN != 1 || !u.DDP.Last {
		t.Errorf("decoded %+v", u)
	}
	term := u.Terminate
	if term.Code != rdma.TermLLPNoRTRModel || term.Layout != LayoutSiw || term.M || term.D || term.R || term.SegLenPresent {
		t.Errorf("Terminate %+v, want siw LLP/0/0x07 with nothing attached", term)
	}
	if _, err := ValidateDDPHeader(&u.DDP, RDMAPVersion1); err != nil {
		t.Error(err)
	}
}

// siw's Terminates as siw_send_terminate builds them: M D R with only a
// DDP header attached (Send-type errors), M D with a tagged header, and a
// Read Request reconstructed with a DDP Segment Length of 0.
func TestTerminateAttachments(t *testing.T) {
	sendHdr := "41 43 00000000 00000000 00000005 00000000"
	writeHdr := "c1 40 00001234 0000000000001000"
	rreqHdr := "41 41 00000000 00000001 00000001 00000000"
	rreq := "aabbccdd 0102030405060708 00000040 55667788 1112131415161718"
	tests := []struct {
		name     string
		body     string
		code     rdma.TermCode
		segLen   uint16
		ddp, rdm string
	}{
		{"siw R without RDMA header", "10 09 07 00 0010" + sendHdr, rdma.TermRDMAPProtInvalidate, 16, sendHdr, ""},
		{"siw tagged DDP header", "11 00 03 00 0008" + writeHdr, rdma.TermDDPInvalidSTag, 8, writeHdr, ""},
		{"siw Read Request, seg len 0", "10 00 07 00 0000" + rreqHdr + rreq, rdma.TermRDMAPInvalidSTag, 0, rreqHdr, rreq},
		{"RFC seg len only", "12 05 80 00 0100", rdma.TermDDPTooLong, 256, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustHex(tc.body)
			term, err := ParseTerminate(b)
			if err != nil {
				t.Fatal(err)
			}
			if term.Code != tc.code || !term.SegLenPresent || term.DDPSegLen != tc.segLen {
				t.Errorf("got %v seg len %v/%d, want %v %d", term.Code, term.SegLenPresent, term.DDPSegLen, tc.code, tc.segLen)
			}
			if !bytes.Equal(term.DDPHeader, mustHex(tc.ddp)) || !bytes.Equal(term.RDMAHeader, mustHex(tc.rdm)) {
				t.Errorf("headers %x / %x, want %s / %s", term.DDPHeader, term.RDMAHeader, tc.ddp, tc.rdm)
			}
			if got := len(AppendTerminate(nil, &term)); got != term.Len() || got != len(b) {
				t.Errorf("encoding is %d bytes, Len %d, input %d", got, term.Len(), len(b))
			}
		})
	}
}

func TestTerminateMalformed(t *testing.T) {
	untaggedHdr := "41 41 00000000 00000001 00000001 00000000"
	rreq := "aabbccdd 0102030405060708 00000040 55667788 1112131415161718"
	tests := []struct {
		name string
		body string
		err  error
		code rdma.TermCode // still decoded when the control field is complete
	}{
		{"empty", "", ErrShortTerminate, rdma.TermCode(0)},
		{"3 bytes", "12 01 e0", ErrShortTerminate, rdma.TermCode(0)},
		{"stray byte", "12 01 e0 00 00", ErrTerminateHeaders, rdma.TermDDPInvalidQN},
		{"short DDP header", "12 01 e0 00 002e 41 41 00000000", ErrTerminateHeaders, rdma.TermDDPInvalidQN},
		{"tagged header, untagged length", "11 00 c0 00 0000 c1 40 00000001 0000000000000000 0000 0000", ErrTerminateHeaders, rdma.TermDDPInvalidSTag},
		{"short RDMA header", "12 01 e0 00 002e" + untaggedHdr + "aabbccdd", ErrTerminateHeaders, rdma.TermDDPInvalidQN},
		{"long RDMA header", "10 00 07 00 0000" + untaggedHdr + rreq + "00", ErrTerminateHeaders, rdma.TermRDMAPInvalidSTag},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term, err := ParseTerminate(mustHex(tc.body))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if term.Code != tc.code {
				t.Errorf("code %v, want %v", term.Code, tc.code)
			}
		})
	}
}

// AppendTerminate writes the DDP Segment Length when asked or when a
// header is attached, and nothing else after a bare control field.
func TestAppendTerminate(t *testing.T) {
	hdr := mustHex("c1 40 00001234 0000000000001000")
	tests := []struct {
		term Terminate
		want string
	}{
		{Terminate{Code: rdma.TermLLPCRC}, "20 02 00 00"},
		{Terminate{Code: rdma.TermRDMAPStreamCatastroph, M: true, SegLenPresent: true, DDPSegLen: 9}, "02 07 80 00 0009"},
		{Terminate{Code: rdma.TermDDPBaseBounds, M: true, D: true, DDPSegLen: 100, DDPHeader: hdr}, "11 01 c0 00 0064 c1 40 00001234 0000000000001000"},
	}
	for _, tc := range tests {
		got := AppendTerminate([]byte{0xEE}, &tc.term)
		if want := append([]byte{0xEE}, mustHex(tc.want)...); !bytes.Equal(got, want) {
			t.Errorf("AppendTerminate(%+v) = %x, want %x", tc.term, got, want)
		}
	}
}

func TestTermLayoutString(t *testing.T) {
	if LayoutRFC.String() != "RFC" || LayoutSiw.String() != "siw" {
		t.Errorf("layout names %q %q", LayoutRFC, LayoutSiw)
	}
}
