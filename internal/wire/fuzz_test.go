package wire

import (
	"bytes"
	"testing"
)

// seedULPDUs adds every ULPDU of the vector files to the corpus.
func seedULPDUs(f *testing.F) {
	for _, file := range []string{"fpdus.tsv", "v2.tsv"} {
		for _, row := range loadVectors(f, file) {
			if row.MPA() {
				continue
			}
			n := int(row.Bytes[0])<<8 | int(row.Bytes[1])
			f.Add(row.Bytes[2 : 2+n])
		}
	}
}

// FuzzParseDDPHeader: parse → append → parse gives the same header, and the
// re-encoding equals the input with the DDP reserved bits cleared.
func FuzzParseDDPHeader(f *testing.F) {
	seedULPDUs(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseDDPHeader(b)
		if err != nil {
			return
		}
		enc := AppendDDPHeader(nil, &h)
		if len(enc) != n || n != h.Len() {
			t.Fatalf("length %d, parsed %d, Len %d", len(enc), n, h.Len())
		}
		want := bytes.Clone(b[:n])
		want[0] &^= DDPRsvdMask
		if !bytes.Equal(enc, want) {
			t.Fatalf("re-encoded %x, want %x", enc, want)
		}
		h2, _, err := ParseDDPHeader(enc)
		if err != nil || h2 != h {
			t.Fatalf("reparse %+v, %v; want %+v", h2, err, h)
		}
	})
}

// FuzzParseULPDU: a parsed ULPDU re-encodes to the input (up to the bits
// the codecs clear: DDP and Terminate reserved bits, and a siw-layout
// Terminate control field, which is re-encoded the RFC way) and parses back
// to the same fields.
func FuzzParseULPDU(f *testing.F) {
	seedULPDUs(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := ParseULPDU(b)
		if err != nil {
			return
		}
		enc := AppendULPDU(nil, &u)
		if len(enc) != len(b) {
			t.Fatalf("re-encoded %d bytes from %d", len(enc), len(b))
		}
		if u.Header != HeaderTerminate && (!bytes.Equal(enc[1:], b[1:]) || enc[0] != b[0]&^DDPRsvdMask) {
			t.Fatalf("re-encoded %x, want %x", enc, b)
		}
		u2, err := ParseULPDU(enc)
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		if u.Header == HeaderTerminate {
			checkTerminateRoundTrip(t, &u.Terminate, &u2.Terminate)
			u.Terminate, u2.Terminate = Terminate{}, Terminate{}
		}
		if !equalULPDU(&u, &u2) {
			t.Fatalf("reparse\n got %+v\nwant %+v", u2, u)
		}
	})
}

func equalULPDU(a, b *ULPDU) bool {
	return a.DDP == b.DDP && a.Opcode == b.Opcode && a.Header == b.Header &&
		a.ReadRequest == b.ReadRequest && a.ReadV2Request == b.ReadV2Request &&
		a.AtomicRequest == b.AtomicRequest && a.AtomicResponse == b.AtomicResponse &&
		a.Immediate == b.Immediate && bytes.Equal(a.Payload, b.Payload) &&
		bytes.Equal(a.Terminate.DDPHeader, b.Terminate.DDPHeader) &&
		bytes.Equal(a.Terminate.RDMAHeader, b.Terminate.RDMAHeader)
}

// checkTerminateRoundTrip compares a Terminate with the parse of its
// RFC-layout re-encoding: the same code and flags read the RFC way, and
// the same parse unless that encoding is itself ambiguous.
func checkTerminateRoundTrip(t *testing.T, t1, t2 *Terminate) {
	t.Helper()
	rfc := DecodeTermControl(t2.Control, LayoutRFC)
	if rfc.Code != t1.Code || rfc.M != t1.M || rfc.D != t1.D || rfc.R != t1.R || rfc.Reserved {
		t.Fatalf("RFC encoding %x reads %+v, want %v M=%v D=%v R=%v", t2.Control, rfc, t1.Code, t1.M, t1.D, t1.R)
	}
	if !t2.Ambiguous && (t2.Code != t1.Code || t2.M != t1.M || t2.D != t1.D || t2.R != t1.R || t2.Layout != LayoutRFC) {
		t.Fatalf("reparse %+v, want %+v", t2, t1)
	}
	if t2.SegLenPresent != t1.SegLenPresent || t2.DDPSegLen != t1.DDPSegLen ||
		!bytes.Equal(t2.DDPHeader, t1.DDPHeader) || !bytes.Equal(t2.RDMAHeader, t1.RDMAHeader) {
		t.Fatalf("attachments differ: %+v vs %+v", t2, t1)
	}
}

// FuzzParseTerminate: parse → append → parse keeps the meaning and the
// attachments; an RFC-layout control field with no reserved bit set
// re-encodes byte for byte.
func FuzzParseTerminate(f *testing.F) {
	for _, s := range []string{
		"12 01 e0 00 002e 41 41 00000000 00000007 00000001 00000000 aabbccdd 0102030405060708 00000040 55667788 1112131415161718",
		"02 02 00 00", "21 06 00 00", "10 00 07 00", "02 07 00 00", "20 05 00 00",
		"10 09 07 00 0010 41 43 00000000 00000000 00000005 00000000",
		"11 00 03 00 0008 c1 40 00001234 0000000000001000",
		"12 05 80 00 0100",
	} {
		f.Add(mustHex(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		t1, err := ParseTerminate(b)
		if err != nil {
			return
		}
		enc := AppendTerminate(nil, &t1)
		if len(enc) != len(b) || len(enc) != t1.Len() {
			t.Fatalf("re-encoded %d bytes from %d (Len %d)", len(enc), len(b), t1.Len())
		}
		if t1.Layout == LayoutRFC && !DecodeTermControl(t1.Control, LayoutRFC).Reserved && !bytes.Equal(enc, b) {
			t.Fatalf("re-encoded %x, want %x", enc, b)
		}
		t2, err := ParseTerminate(enc)
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		checkTerminateRoundTrip(t, &t1, &t2)
	})
}

// FuzzAtomicHeaders: the Atomic Request and Response round-trip exactly,
// whatever the AOpCode and reserved bits.
func FuzzAtomicHeaders(f *testing.F) {
	f.Add(atomicCmpSwapGolden)
	f.Add(annotatedHex(`
		00000000         FetchAdd
		0000bef0         Request Identifier
		99aabbcc         Remote STag
		0000000000001008 Remote TO
		0000000000000005 Add Data
		0000000000000000 Add Mask
		0000000000000000 Compare Data
		ffffffffffffffff Compare Mask`))
	f.Add(atomicResponseGolden)
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseAtomicRequest(b); err == nil || err == ErrUnknownAOpCode {
			enc := AppendAtomicRequest(nil, &r)
			if !bytes.Equal(enc, b[:AtomicRequestLen]) {
				t.Fatalf("request re-encoded %x, want %x", enc, b[:AtomicRequestLen])
			}
			if r2, err2 := ParseAtomicRequest(enc); r2 != r || err2 != err {
				t.Fatalf("request reparse %+v %v, want %+v %v", r2, err2, r, err)
			}
		} else if len(b) >= AtomicRequestLen {
			t.Fatalf("request of %d bytes: %v", len(b), err)
		}
		if r, err := ParseAtomicResponse(b); err == nil {
			enc := AppendAtomicResponse(nil, &r)
			if !bytes.Equal(enc, b[:AtomicResponseLen]) {
				t.Fatalf("response re-encoded %x, want %x", enc, b[:AtomicResponseLen])
			}
			if r2, _ := ParseAtomicResponse(enc); r2 != r {
				t.Fatalf("response reparse %+v, want %+v", r2, r)
			}
		} else if len(b) >= AtomicResponseLen {
			t.Fatalf("response of %d bytes: %v", len(b), err)
		}
	})
}
