package mpa

import (
	"bytes"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// wantFrame is the decoding a vector must give.
type wantFrame struct {
	reply bool
	flags Flags
	rev   uint8
	blk   *IRDORD // nil: not enhanced
	ulp   string
}

// goldenFrames annotates every frame vector (names from vectors_test.go).
var goldenFrames = map[string]wantFrame{
	// internal/vectors/testdata: fpdus.tsv, markers.tsv, v2.tsv.
	"fpdus:mpa-request-rev1-crc":        {false, FlagCRC, 1, nil, ""},
	"fpdus:mpa-reply-rev1-crc-pd":       {true, FlagCRC, 1, nil, "ok"},
	"markers:mpa-request-wants-markers": {false, FlagMarkers | FlagCRC, 1, nil, ""},
	"markers:mpa-reply":                 {true, FlagCRC, 1, nil, ""},
	"v2:mpa-request-rev2-ext":           {false, FlagCRC | FlagEnhanced | 0x03, 2, &IRDORD{IRD: 16, ORD: 16}, ""},
	"v2:mpa-reply-rev2-ext":             {true, FlagCRC | FlagEnhanced | 0x03, 2, &IRDORD{IRD: 16, ORD: 16}, ""},
	// siw_mpa_request.hex, in file order: rping, rdma_client, ib_send_bw,
	// the p2p, crc and v1 builds.
	"siw-request-1": {false, FlagEnhanced, 2, &IRDORD{IRD: 1, ORD: 1}, ""},
	"siw-request-2": {false, FlagEnhanced, 2, &IRDORD{IRD: 128, ORD: 128}, ""},
	"siw-request-3": {false, FlagEnhanced, 2, &IRDORD{}, ""},
	"siw-request-4": {false, FlagEnhanced, 2, &IRDORD{P2P: true, RTR: RTRWrite | RTRRead, IRD: 1, ORD: 1}, ""},
	"siw-request-5": {false, FlagCRC | FlagEnhanced, 2, &IRDORD{IRD: 1, ORD: 1}, ""},
	"siw-request-6": {false, 0, 1, nil, ""},
	// siw_mpa_reply.hex: the probes and siw's replies.
	"v1_nocrc/req":         {false, 0, 1, nil, ""},
	"v1_nocrc/rep":         {true, 0, 1, nil, ""},
	"v1_crc/req":           {false, FlagCRC, 1, nil, ""},
	"v1_crc/rep":           {true, FlagCRC, 1, nil, ""},
	"v2_enh_nocrc/req":     {false, FlagEnhanced, 2, &IRDORD{IRD: 16, ORD: 16}, ""},
	"v2_enh_nocrc/rep":     {true, FlagEnhanced, 2, &IRDORD{IRD: 16, ORD: 16}, ""},
	"v2_enh_p2p_wrtr/req":  {false, FlagEnhanced, 2, &IRDORD{P2P: true, RTR: RTRWrite, IRD: 16, ORD: 16}, ""},
	"v2_enh_p2p_wrtr/rep":  {true, FlagEnhanced, 2, &IRDORD{P2P: true, RTR: RTRWrite, IRD: 16, ORD: 16}, ""},
	"v2_enh_crc_pd/req":    {false, FlagCRC | FlagEnhanced, 2, &IRDORD{IRD: 8, ORD: 8}, "hello-pd"},
	"v2_enh_crc_pd/rep":    {true, FlagCRC | FlagEnhanced, 2, &IRDORD{IRD: 8, ORD: 8}, ""},
	"markers_rejected/req": {false, FlagMarkers, 1, nil, ""},
	"markers_rejected/rep": {true, FlagReject, 1, nil, ""},
}

func TestParseFrameGolden(t *testing.T) {
	vecs := allFrameVectors(t)
	if len(vecs) != len(goldenFrames) {
		t.Errorf("%d vectors, %d annotations", len(vecs), len(goldenFrames))
	}
	for _, v := range vecs {
		want, ok := goldenFrames[v.name]
		if !ok {
			t.Errorf("%s: no annotation", v.name)
			continue
		}
		f, n, err := ParseFrame(v.b, 0)
		if err != nil || n != len(v.b) {
			t.Errorf("%s: ParseFrame = %d, %v; want %d, nil", v.name, n, err, len(v.b))
			continue
		}
		if f.Reply != want.reply || f.Flags != want.flags || f.Rev != want.rev {
			t.Errorf("%s: got reply=%v flags=%#02x rev=%d; want %v %#02x %d", v.name, f.Reply, f.Flags, f.Rev, want.reply, want.flags, want.rev)
		}
		blk, enh := f.IRDORD()
		switch {
		case enh != (want.blk != nil):
			t.Errorf("%s: enhanced=%v, want %v", v.name, enh, want.blk != nil)
		case enh && blk != *want.blk:
			t.Errorf("%s: block %+v, want %+v", v.name, blk, *want.blk)
		}
		if string(f.ULPData()) != want.ulp {
			t.Errorf("%s: ULP data %q, want %q", v.name, f.ULPData(), want.ulp)
		}
		// Re-encode byte for byte, both as parsed and from the fields.
		if got := AppendFrame(nil, &f); !bytes.Equal(got, v.b) {
			t.Errorf("%s: AppendFrame = %x, want %x", v.name, got, v.b)
		}
		hdr := Frame{Reply: want.reply, Flags: want.flags, Rev: want.rev}
		var b IRDORD
		if want.blk != nil {
			b = *want.blk
		}
		if got := appendFrameBlock(nil, hdr, &b, []byte(want.ulp)); !bytes.Equal(got, v.b) {
			t.Errorf("%s: appendFrameBlock = %x, want %x", v.name, got, v.b)
		}
	}
}

func TestParseFrameTruncated(t *testing.T) {
	for _, v := range allFrameVectors(t) {
		for i := range len(v.b) {
			if _, _, err := ParseFrame(v.b[:i], 0); !errors.Is(err, ErrShortFrame) {
				t.Errorf("%s[:%d]: err = %v, want ErrShortFrame", v.name, i, err)
			}
		}
	}
}

func frameBytes(flags Flags, rev uint8, pd []byte) []byte {
	return AppendFrame(nil, &Frame{Flags: flags, Rev: rev, PrivateData: pd})
}

func TestParseFrameErrors(t *testing.T) {
	badKey := frameBytes(0, 1, nil)
	copy(badKey, "MPA ID BAD Frame") // like the bad key of siw's bad_key probe
	long := frameBytes(0, 1, make([]byte, 513))
	cases := []struct {
		name  string
		b     []byte
		maxPD int
		err   *wire.ProtocolError
	}{
		{"bad key", badKey, 0, ErrBadKey},
		{"lower-case key", append([]byte("mpa id req frame"), 0, 1, 0, 0), 0, ErrBadKey},
		{"rev 0", frameBytes(0, 0, nil), 0, ErrUnknownRev},
		{"rev 3", frameBytes(0, 3, nil), 0, ErrUnknownRev},
		{"rev 255", frameBytes(0, 255, nil), 0, ErrUnknownRev},
		{"PD_Length 513", long, 0, ErrPrivateDataTooLong},
		{"PD_Length 513, limit 1000", long, 1000, ErrPrivateDataTooLong},
		{"PD_Length 257 over limit 256", frameBytes(0, 1, make([]byte, 257)), 256, ErrPrivateDataTooLong},
		{"PD_Length 0xFFFF header only", append([]byte(RequestKey), 0, 1, 0xFF, 0xFF), 0, ErrPrivateDataTooLong},
		{"H with 3 bytes", frameBytes(FlagEnhanced, 2, []byte{0, 1, 0}), 0, ErrShortIRDORD},
		{"H with none", frameBytes(FlagEnhanced, 2, nil), 0, ErrShortIRDORD},
	}
	for _, c := range cases {
		_, n, err := ParseFrame(c.b, c.maxPD)
		if err != c.err || n != 0 {
			t.Errorf("%s: got %d, %v; want 0, %v", c.name, n, err, c.err)
		}
		var pe *wire.ProtocolError
		if !errors.As(err, &pe) || pe.Code != rdma.TermLLPInvalidFrame {
			t.Errorf("%s: %v does not carry LLP/0/0x04", c.name, err)
		}
	}
	// Limits that pass: 512 by default, exactly the limit, H under Rev 1
	// is reserved (no block needed), bytes after the frame are not read.
	ok := [][]byte{
		frameBytes(0, 1, make([]byte, 512)),
		frameBytes(FlagEnhanced, 1, nil),
		append(frameBytes(0, 2, []byte("pd")), 0xde, 0xad),
	}
	for i, b := range ok {
		if _, _, err := ParseFrame(b, 0); err != nil {
			t.Errorf("ok[%d]: %v", i, err)
		}
	}
	if _, _, err := ParseFrame(frameBytes(0, 1, make([]byte, 256)), 256); err != nil {
		t.Errorf("PD exactly at limit: %v", err)
	}
	if f, n, err := ParseFrame(ok[2], 0); err != nil || n != 22 || string(f.PrivateData) != "pd" || cap(f.PrivateData) != 2 {
		t.Errorf("trailing bytes: %d %v %q cap %d", n, err, f.PrivateData, cap(f.PrivateData))
	}
}

func TestFrameAccessors(t *testing.T) {
	// H under Rev 1 is not the RFC 6581 block: all private data is ULP data.
	f := Frame{Flags: FlagEnhanced, Rev: 1, PrivateData: []byte("abcd")}
	if f.Enhanced() || string(f.ULPData()) != "abcd" {
		t.Errorf("Rev 1 with H: enhanced=%v ULP %q", f.Enhanced(), f.ULPData())
	}
	if _, ok := f.IRDORD(); ok {
		t.Error("Rev 1 frame has a block")
	}
	if f.Len() != 24 {
		t.Errorf("Len = %d", f.Len())
	}
	if Flags(0x5B).Ext() != 0x03 {
		t.Error("Ext does not mask the nibble")
	}
}

func TestIRDORDCodec(t *testing.T) {
	cases := []struct {
		hex string
		v   IRDORD
	}{
		{"00010001", IRDORD{IRD: 1, ORD: 1}},
		{"8001c001", IRDORD{P2P: true, RTR: RTRWrite | RTRRead, IRD: 1, ORD: 1}},
		{"80108010", IRDORD{P2P: true, RTR: RTRWrite, IRD: 16, ORD: 16}},
		{"c0004000", IRDORD{P2P: true, RTR: RTRSend | RTRRead}},
		{"3fff3fff", IRDORD{IRD: IRDORDMax, ORD: IRDORDMax}},
		{"ffffffff", IRDORD{P2P: true, RTR: RTRAll, IRD: IRDORDMax, ORD: IRDORDMax}},
	}
	for _, c := range cases {
		b := hexBytes(t, c.hex)
		v, err := ParseIRDORD(b)
		if err != nil || v != c.v {
			t.Errorf("%s: %+v %v, want %+v", c.hex, v, err, c.v)
		}
		if got := AppendIRDORD(nil, &v); !bytes.Equal(got, b) {
			t.Errorf("%s: re-encoded %x", c.hex, got)
		}
		for i := range len(b) {
			if _, err := ParseIRDORD(b[:i]); err != ErrShortIRDORD {
				t.Errorf("%s[:%d]: %v", c.hex, i, err)
			}
		}
	}
	over := IRDORD{IRD: 0x7FFF, ORD: 0xC001}
	if got := AppendIRDORD(nil, &over); !bytes.Equal(got, hexBytes(t, "3fff0001")) {
		t.Errorf("out-of-range IRD/ORD leaked into flag bits: %x", got)
	}
}

func TestRTRAndExtStrings(t *testing.T) {
	if s := (RTRWrite | RTRRead | RTRSend).String(); s != "Write|Read|Send" {
		t.Error(s)
	}
	if s := RTR(0).String(); s != "none" {
		t.Error(s)
	}
	for e, want := range map[Ext]string{0: "none", 1: "V2", 2: "RFC7306", 3: "RFC7306+V2", 0xF: "RFC7306+V2"} {
		if e.String() != want {
			t.Errorf("%#x: %s", uint8(e), e.String())
		}
	}
	for e, want := range map[Ext]Ext{0: 0, ExtV2: 0, ExtRFC7306: ExtRFC7306, ExtAll: ExtAll, 0x0C: 0, 0x0D: 0, 0x0E: ExtRFC7306} {
		if got := e.Normalize(); got != want {
			t.Errorf("Normalize(%#x) = %#x, want %#x", uint8(e), uint8(got), uint8(want))
		}
	}
	for a, want := range map[Action]string{ActionAccept: "accept", ActionReject: "reject", ActionClose: "close", ActionTerminate: "terminate", 9: "action?"} {
		if a.String() != want {
			t.Errorf("%d: %s", a, a.String())
		}
	}
}

func TestParseFrameAllocs(t *testing.T) {
	b := hexBytes(t, "4d504120494420526571204672616d655302000400100010")
	allocs := testing.AllocsPerRun(100, func() {
		f, _, err := ParseFrame(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.IRDORD(); !ok {
			t.Fatal("no block")
		}
		if _, _, err := ParseFrame(b[:10], 0); err == nil {
			t.Fatal("short frame parsed")
		}
	})
	if allocs != 0 {
		t.Errorf("ParseFrame allocates %v times", allocs)
	}
	buf := make([]byte, 0, 64)
	f, _, _ := ParseFrame(b, 0)
	if a := testing.AllocsPerRun(100, func() { buf = AppendFrame(buf[:0], &f) }); a != 0 {
		t.Errorf("AppendFrame allocates %v times", a)
	}
}

// FuzzParseFrame checks that ParseFrame never panics, that whatever it
// accepts re-encodes to the same bytes, and that the block round-trips.
func FuzzParseFrame(f *testing.F) {
	for _, v := range allFrameVectors(f) {
		f.Add(v.b, 0)
	}
	f.Add(frameBytes(FlagEnhanced, 2, []byte{0xff, 0xff, 0xff, 0xff, 1}), 256)
	f.Fuzz(func(t *testing.T, b []byte, maxPD int) {
		fr, n, err := ParseFrame(b, maxPD)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with n=%d", err, n)
			}
			return
		}
		if n > len(b) || n != fr.Len() {
			t.Fatalf("n=%d len=%d frame len %d", n, len(b), fr.Len())
		}
		if got := AppendFrame(nil, &fr); !bytes.Equal(got, b[:n]) {
			t.Fatalf("round trip: %x != %x", got, b[:n])
		}
		if blk, ok := fr.IRDORD(); ok {
			if got := AppendIRDORD(nil, &blk); !bytes.Equal(got, fr.PrivateData[:IRDORDLen]) {
				t.Fatalf("block round trip: %x != %x", got, fr.PrivateData[:IRDORDLen])
			}
		} else if fr.Enhanced() {
			t.Fatal("enhanced frame without a block")
		}
	})
}
