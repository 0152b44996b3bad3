package decode

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/vectors"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The wire vectors (internal/vectors/testdata, see its README) are the
// project's byte-exact references.
const vectorDir = "../vectors/testdata/"

func readVector(t *testing.T, name string) *Conn {
	t.Helper()
	b, err := os.ReadFile(vectorDir + name)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ReadText(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Conns()) != 1 {
		t.Fatalf("%s: %d connections", name, len(a.Conns()))
	}
	return DecodeConn(a.Conns()[0], Options{})
}

// byFrame returns the FPDU items by vector row (frame).
func byFrame(c *Conn) map[int]*Item {
	m := map[int]*Item{}
	for i := range c.Items {
		if c.Items[i].Kind == KindFPDU {
			m[c.Items[i].Frame] = &c.Items[i]
		}
	}
	return m
}

// clean fails unless it is a complete FPDU with a good CRC and no error.
func clean(t *testing.T, frame int, it *Item) {
	t.Helper()
	if it == nil {
		t.Fatalf("row %d: no FPDU", frame)
	}
	if it.FPDUErr != nil || it.ULPDUErr != nil || it.CheckErr != nil || !it.CRCGood() {
		t.Errorf("row %d: errors %v / %v / %v, crc good %v", frame, it.FPDUErr, it.ULPDUErr, it.CheckErr, it.CRCGood())
	}
}

// TestFPDUVectors checks the decoded fields against the meaning column of
// internal/vectors/testdata/fpdus.tsv.
func TestFPDUVectors(t *testing.T) {
	c := readVector(t, "fpdus.tsv")
	if !c.Startup || c.CRC != CRCOn || c.Initiator != 0 || c.Markers != [2]bool{} || c.Ext != 0 {
		t.Fatalf("startup: %+v", c)
	}
	if pd := c.Reply.ULPData(); string(pd) != "ok" {
		t.Errorf("reply private data %q", pd)
	}
	f := byFrame(c)
	for row := 3; row <= 15; row++ {
		clean(t, row, f[row])
	}
	untagged := func(row int, op wire.Opcode, qn, msn, mo uint32, last bool, payload int) {
		t.Helper()
		u := &f[row].ULPDU
		if u.Opcode != op || u.DDP.Tagged || u.DDP.QN != qn || u.DDP.MSN != msn || u.DDP.MO != mo || u.DDP.Last != last || len(u.Payload) != payload {
			t.Errorf("row %d: got %v QN %d MSN %d MO %d L %v payload %d", row, u.Opcode, u.DDP.QN, u.DDP.MSN, u.DDP.MO, u.DDP.Last, len(u.Payload))
		}
	}
	untagged(3, wire.OpSend, 0, 1, 0, true, 13)
	if string(f[3].ULPDU.Payload) != "hello, iWARP!" || f[3].FPDU.PadLen != 3 {
		t.Errorf("row 3: payload %q pad %d", f[3].ULPDU.Payload, f[3].FPDU.PadLen)
	}
	untagged(4, wire.OpSend, 0, 2, 0, false, 24)
	untagged(5, wire.OpSend, 0, 2, 24, true, 16)
	if u := &f[6].ULPDU; u.Opcode != wire.OpWrite || u.DDP.STag != 0x11223344 || u.DDP.TO != 0x100000000 || len(u.Payload) != 1000 {
		t.Errorf("row 6: %+v", u.DDP)
	}
	untagged(7, wire.OpReadRequest, 1, 1, 0, true, 0)
	if r := f[7].ULPDU.ReadRequest; r != (wire.ReadRequest{SinkSTag: 0xaabbccdd, SinkTO: 0x0102030405060708, Size: 64, SrcSTag: 0x55667788, SrcTO: 0x1112131415161718}) {
		t.Errorf("row 7: %+v", r)
	}
	untagged(8, wire.OpAtomicRequest, 1, 2, 0, true, 0)
	if a := f[8].ULPDU.AtomicRequest; a.AOpCode != wire.AOpCmpSwap || a.RequestID != 0xbeef || a.STag != 0x99aabbcc ||
		a.TO != 0x1000 || a.AddSwapData != 0x1111111111111111 || a.AddSwapMask != ^uint64(0) || a.CompareData != 0x2222222222222222 || a.CompareMask != ^uint64(0) {
		t.Errorf("row 8: %+v", a)
	}
	if a := f[9].ULPDU.AtomicRequest; a.AOpCode != wire.AOpFetchAdd || a.RequestID != 0xbef0 || a.TO != 0x1008 || a.AddSwapData != 5 || a.AddSwapMask != 0 || a.CompareMask != ^uint64(0) {
		t.Errorf("row 9: %+v", a)
	}
	untagged(10, wire.OpImmediate, 0, 3, 0, true, 0)
	if f[10].ULPDU.Immediate.String() != "c0ffee0001020304" || !strings.Contains(f[10].Note, "RFC 7306 not negotiated") {
		t.Errorf("row 10: %v %q", f[10].ULPDU.Immediate, f[10].Note)
	}
	untagged(11, wire.OpImmediateSE, 0, 4, 0, true, 0)
	if u := &f[12].ULPDU; u.Opcode != wire.OpReadResponse || u.DDP.STag != 0xaabbccdd || u.DDP.TO != 0x0102030405060708 || !bytes.Equal(u.Payload, bytes.Repeat([]byte{0x5a}, 64)) {
		t.Errorf("row 12: %+v", u.DDP)
	}
	untagged(13, wire.OpAtomicResponse, 3, 1, 0, true, 0)
	if r := f[13].ULPDU.AtomicResponse; r.RequestID != 0xbeef || r.OriginalValue != 0x2222222222222222 {
		t.Errorf("row 13: %+v", r)
	}
	if r := f[14].ULPDU.AtomicResponse; r.RequestID != 0xbef0 || r.OriginalValue != 0x2a {
		t.Errorf("row 14: %+v", r)
	}
	untagged(15, wire.OpTerminate, 2, 1, 0, true, 0)
	term := &f[15].ULPDU.Terminate
	if term.Code != rdma.TermDDPInvalidQN || !term.M || !term.D || !term.R || term.DDPSegLen != 46 || len(term.DDPHeader) != 18 || len(term.RDMAHeader) != 28 {
		t.Errorf("row 15: %+v", term)
	}
	line := Line(c, f[15], RenderOptions{Payload: 16})
	for _, want := range []string{"term=DDP/2/0x01(untagged buffer; invalid QN) M=1 D=1 R=1 seglen=46", "ddphdr={T=0 L=1 DV=1 RV=1 RDMA Read Request(0x1) QN=7 MSN=1 MO=0}", "rdmahdr={sinkSTag=0xaabbccdd"} {
		if !strings.Contains(line, want) {
			t.Errorf("Terminate line lacks %q:\n%s", want, line)
		}
	}
	if c.Stats[0].FPDUs != 9 || c.Stats[1].FPDUs != 4 || c.Stats[0].CRCGood != 9 || c.Stats[1].Errors != 0 {
		t.Errorf("stats %+v", c.Stats)
	}
}

// TestV2Vectors checks internal/vectors/testdata/v2.tsv: RV=2, 5-bit opcodes, the
// negotiated extension set.
func TestV2Vectors(t *testing.T) {
	c := readVector(t, "v2.tsv")
	if c.Ext.String() != "RFC7306+V2" || c.rdmapVersion() != wire.RDMAPVersion2 {
		t.Fatalf("extensions %v", c.Ext)
	}
	f := byFrame(c)
	want := map[int]wire.Opcode{3: wire.OpWrite, 4: wire.OpSendImm, 5: wire.OpSendImm, 6: wire.OpSendImm,
		7: wire.OpSendSEInvImm, 8: wire.OpReadV2Request, 9: wire.OpAtomicRequest, 10: wire.OpReadV2Response,
		11: wire.OpReadV2Response, 12: wire.OpAtomicResponse}
	for row, op := range want {
		clean(t, row, f[row])
		if got := f[row].ULPDU.Opcode; got != op || f[row].ULPDU.DDP.Control.Version() != 2 {
			t.Errorf("row %d: %v RV %d, want %v RV 2", row, got, f[row].ULPDU.DDP.Control.Version(), op)
		}
	}
	if f[5].ULPDU.Immediate.Uint64() != 0x1122334455667788 || f[5].ULPDU.DDP.MO != 6 {
		t.Errorf("row 5: %v MO %d", f[5].ULPDU.Immediate, f[5].ULPDU.DDP.MO)
	}
	if f[7].ULPDU.DDP.InvSTag != 0x00abcd01 || !strings.Contains(Line(c, f[7], RenderOptions{}), "InvSTag=0x00abcd01") {
		t.Errorf("row 7: invalidate STag %#x", f[7].ULPDU.DDP.InvSTag)
	}
	if r := f[8].ULPDU.ReadV2Request; r != (wire.ReadV2Request{Size: 16, SrcSTag: 0x2000, SrcTO: 0x40}) {
		t.Errorf("row 8: %+v", r)
	}
	if f[12].ULPDU.DDP.MSN != 2 || f[12].ULPDU.AtomicResponse.OriginalValue != 41 {
		t.Errorf("row 12: %+v", f[12].ULPDU)
	}
}

// TestMarkerVectors checks internal/vectors/testdata/markers.tsv: markers in the
// Responder's stream only, FPDUPTR checked, CRC good.
func TestMarkerVectors(t *testing.T) {
	c := readVector(t, "markers.tsv")
	if c.Markers[c.Initiator] || !c.Markers[1-c.Initiator] {
		t.Fatalf("markers %v (initiator %d)", c.Markers, c.Initiator)
	}
	f := byFrame(c)
	wantMarkers := map[int]int{3: 3, 4: 1, 5: 1}
	for row, n := range wantMarkers {
		clean(t, row, f[row])
		if f[row].FPDU.Markers != n || f[row].FPDU.BadMarkers != 0 {
			t.Errorf("row %d: %d markers (%d bad), want %d", row, f[row].FPDU.Markers, f[row].FPDU.BadMarkers, n)
		}
	}
	if f[4].Off != 20+1532 || len(f[3].ULPDU.Payload) != 1500 {
		t.Errorf("offsets: row 4 at %d, row 3 payload %d", f[4].Off, len(f[3].ULPDU.Payload))
	}
}

// vectorStream returns the concatenated bytes of one direction of a vector
// file, without the MPA frames.
func vectorStream(t *testing.T, name string, initiator bool) []byte {
	t.Helper()
	fs, err := vectors.ReadFile(vectorDir + name)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, f := range fs {
		if f.Initiator() == initiator && !f.MPA() {
			out = append(out, f.Bytes...)
		}
	}
	return out
}

var (
	epA = netip.MustParseAddrPort("192.0.2.1:40000")
	epB = netip.MustParseAddrPort("192.0.2.2:7000")
)

// midConn builds a connection whose capture starts mid-stream: no SYN, the
// given bytes from A, cut into segments at the given points; a cut made of
// two equal points leaves a hole of `hole` bytes there.
func midConn(data []byte, segs []int, hole int) *capture.Conn {
	a := capture.NewAssembler(capture.Limits{})
	seq := uint32(5000)
	prev := 0
	frame := 0
	for _, cut := range append(segs, len(data)) {
		if cut < prev {
			continue
		}
		frame++
		a.AddSegment(&capture.Segment{Frame: frame, Src: epA, Dst: epB, Seq: seq + uint32(prev), Flags: capture.TCPAck, Payload: data[prev:cut]})
		prev = cut
		if cut < len(data) && hole > 0 && cut == segs[0] {
			prev = cut + hole
		}
	}
	a.Flush()
	return a.Conns()[0]
}

// TestMidConnectionCRC starts the capture inside an FPDU of a CRC stream:
// the decoder resynchronises on the next FPDU whose CRC validates, even for
// a connection it does not know to be MPA.
func TestMidConnectionCRC(t *testing.T) {
	stream := vectorStream(t, "fpdus.tsv", true)
	cut := 7 // inside the first FPDU (40 bytes)
	c := DecodeConn(midConn(stream[cut:], nil, 0), Options{})
	if !c.MPA || c.Initiator != -1 || c.CRCDir[0] != CRCAssumedOn {
		t.Fatalf("MPA %v initiator %d CRC %v notes %v", c.MPA, c.Initiator, c.CRCDir[0], c.Notes)
	}
	if c.Items[0].Kind != KindResync || c.Items[0].Size != 40-uint64(cut) {
		t.Fatalf("first item %+v", c.Items[0])
	}
	if c.Stats[0].FPDUs != 8 || c.Stats[0].CRCGood != 8 || c.Stats[0].Errors != 0 {
		t.Errorf("stats %+v", c.Stats[0])
	}
}

// TestMidConnectionNoCRC: without CRCs only -port (Options.Ports) makes a
// mid-connection stream decode; FPDUs are then found by their headers.
func TestMidConnectionNoCRC(t *testing.T) {
	b, err := os.ReadFile("../../interop/captures/transcripts/siw-rping-session.log")
	if err != nil {
		t.Fatal(err)
	}
	a, err := ReadText(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	full := a.Conns()[0].Dir[0].Runs()[0].Data // Initiator stream, MPA Request first
	cut := 24 + 13                             // inside the first FPDU after the Request
	if c := DecodeConn(midConn(full[cut:], nil, 0), Options{}); c.MPA {
		t.Errorf("CRC-off stream taken as MPA without -port: %+v", c.Stats)
	}
	c := DecodeConn(midConn(full[cut:], nil, 0), Options{Ports: []uint16{7000}})
	if !c.MPA || c.CRCDir[0] != CRCAssumedOff || c.Stats[0].FPDUs == 0 || c.Stats[0].Errors != 0 {
		t.Fatalf("with -port: MPA %v CRC %v stats %+v", c.MPA, c.CRCDir[0], c.Stats[0])
	}
	if c.Items[0].Kind != KindResync || c.Items[0].Size != 40-13 {
		t.Errorf("first item %+v", c.Items[0])
	}
}

// TestGapResync loses bytes in the middle of a CRC stream with its startup:
// the decoder reports the gap and resumes at the next FPDU.
func TestGapResync(t *testing.T) {
	req, _ := hex.DecodeString("4d504120494420526571204672616d6540010000")
	stream := append(req, vectorStream(t, "fpdus.tsv", true)...)
	// Lose 30 bytes inside the Write (which starts at stream offset 148).
	c := DecodeConn(midConn(stream, []int{200}, 30), Options{})
	var kinds []Kind
	for _, it := range c.Items {
		kinds = append(kinds, it.Kind)
	}
	if c.Stats[0].Gaps != 1 || c.Stats[0].GapBytes != 30 {
		t.Fatalf("gaps: %+v", c.Stats[0])
	}
	// MPA, 3 Sends, the Write cut by the gap, GAP, RESYNC, 5 more FPDUs.
	// The cut Write is counted as cut, not as an error: the wire carried it.
	if c.Stats[0].FPDUs != 9 || c.Stats[0].CRCGood != 8 || c.Stats[0].Skipped == 0 ||
		c.Stats[0].Cut != 1 || c.Stats[0].Errors != 0 {
		t.Errorf("stats %+v, kinds %v", c.Stats[0], kinds)
	}
	for _, it := range c.Items {
		if it.Kind == KindFPDU && it.FPDUErr == fpdu.ErrTruncated && !strings.Contains(it.Text, "gap") {
			t.Errorf("truncated FPDU not blamed on the gap: %q", it.Text)
		}
	}
}

// TestTruncatedStreams decodes every prefix of a vector stream: nothing
// panics, every FPDU but the last is whole and good, and the last one is
// whole or reported truncated.
func TestTruncatedStreams(t *testing.T) {
	req, _ := hex.DecodeString("4d504120494420526571204672616d6540010000")
	rep, _ := hex.DecodeString("4d504120494420526570204672616d65400100026f6b")
	stream := vectorStream(t, "fpdus.tsv", true)
	for n := 0; n <= len(stream); n++ {
		a, err := assembleText([]*textConn{{recs: []textRecord{
			{initiator: true, off: -1, data: append(append([]byte(nil), req...), stream[:n]...)},
			{off: -1, data: rep},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		c := DecodeConn(a.Conns()[0], Options{})
		var fpdus []*Item
		for i := range c.Items {
			if c.Items[i].Kind == KindFPDU && c.Items[i].Dir == 0 {
				fpdus = append(fpdus, &c.Items[i])
			}
		}
		for i, it := range fpdus {
			if i == len(fpdus)-1 && it.FPDUErr == fpdu.ErrTruncated {
				continue
			}
			if !it.CRCGood() || it.ULPDUErr != nil {
				t.Fatalf("prefix %d: FPDU %d at %d: crc %v parse %v", n, i, it.Off, it.CRCGood(), it.ULPDUErr)
			}
		}
	}
}

func TestReadTextFormats(t *testing.T) {
	text := `# comment
req: 4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 00 01 00 00
rep: 4d 50 41 20 49 44 20 52 65 70 20 46 72 61 6d 65 00 01 00 00
4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 00 01 00 00
1.0 c2s off=0 len=20
00000000  4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65  |MPA ID Req Frame|
00000010  00 01 00 00                                      |....|
1.1 s2c off=0 len=20
00000000  4d 50 41 20 49 44 20 52 65 70 20 46 72 61 6d 65  |MPA ID Rep Frame|
00000010  00 01 00 00                                      |....|
`
	a, err := ReadText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(a.Conns()); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
	for i, want := range [][2]uint64{{20, 20}, {20, 0}, {20, 20}} {
		c := a.Conns()[i]
		if c.Dir[0].Len() != want[0] || c.Dir[1].Len() != want[1] {
			t.Errorf("conn %d: %d/%d bytes, want %v", i+1, c.Dir[0].Len(), c.Dir[1].Len(), want)
		}
	}
	for _, bad := range []string{
		"name\tdirection\thex\nx\tsideways\t00\n",
		"name\tdirection\thex\nx\tI->R\tzz\n",
		"name\thex\nx\t00\n",
		"req: 4d 5\n",
	} {
		if _, err := ReadText(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if _, err := ReadText(strings.NewReader("op\toriginal\nfetchadd\t00\n")); err != ErrNoStreams {
		t.Errorf("no streams: %v", err)
	}
}

// TestGapResyncWithMarkers loses bytes inside the first FPDU of a stream
// with markers: the decoder finds the second FPDU, whose header holds a
// marker, by its stream position, and checks the markers after the gap.
func TestGapResyncWithMarkers(t *testing.T) {
	req, _ := hex.DecodeString("4d504120494420526571204672616d65c0010000")
	rep, _ := hex.DecodeString("4d504120494420526570204672616d6540010000")
	stream := vectorStream(t, "markers.tsv", false)
	a, err := assembleText([]*textConn{{recs: []textRecord{
		{initiator: true, off: -1, data: req},
		{off: 0, data: rep},
		{off: 20, data: stream[:100]},
		{off: 20 + 200, data: stream[200:]},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	c := DecodeConn(a.Conns()[0], Options{})
	st := c.Stats[1]
	if st.Gaps != 1 || st.GapBytes != 100 || st.FPDUs != 3 || st.CRCGood != 2 || st.BadMarkers != 0 || st.Markers != 3 {
		t.Errorf("stats %+v", st)
	}
	var offs []uint64
	for _, it := range c.Items {
		if it.Kind == KindFPDU && it.Dir == 1 && it.FPDUErr == nil {
			offs = append(offs, it.Off)
		}
	}
	if len(offs) != 2 || offs[0] != 20+1532 || offs[1] != 20+1660 {
		t.Errorf("FPDUs after the gap at %v, want [1552 1680]", offs)
	}
}

// TestBadMPAFrames: frames with an MPA key that fail to parse are shown
// with their raw header and the error, and the private data they announce
// is stepped over.
func TestBadMPAFrames(t *testing.T) {
	text := `req: 4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 40 05 00 00
rep: 4d 50 41 20 49 44 20 52 65 70 20 46 72 61 6d 65 40 01 03 00 41
req: 4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 10 02 00 02 00 01
req: 4d 50 41 20 49 44 20 52 65 71 20
`
	a, err := ReadText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var conns []*Conn
	for _, c := range a.Conns() {
		conns = append(conns, DecodeConn(c, Options{}))
	}
	Render(&out, conns, RenderOptions{Payload: 4})
	for _, want := range []string{
		`MPA frame key="MPA ID Req Frame" rev=5 flags=0x40[C] pd_len=0 (20 bytes) ERROR: unsupported MPA Rev`,
		`MPA frame key="MPA ID Rep Frame" rev=1 flags=0x40[C] pd_len=768 (20 bytes) ERROR: MPA private data too long`,
		`pd_len=2 (22 bytes) ERROR: MPA private data too short for the IRD/ORD block`,
		`MPA frame key="MPA ID Req " (11 bytes) ERROR: MPA frame truncated`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestV2NotNegotiated: RV=2 frames after a startup without the V2 bit are
// decoded (RV decides the opcode width) and flagged as an invalid RDMAP
// version, as a receiver would Terminate them.
func TestV2NotNegotiated(t *testing.T) {
	req, _ := hex.DecodeString("4d504120494420526571204672616d6540010000")
	rep, _ := hex.DecodeString("4d504120494420526570204672616d6540010000")
	stream := vectorStream(t, "v2.tsv", true)
	a, err := assembleText([]*textConn{{recs: []textRecord{
		{initiator: true, off: -1, data: append(req, stream...)},
		{off: -1, data: rep},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	c := DecodeConn(a.Conns()[0], Options{})
	n := 0
	for _, it := range c.Items {
		if it.Kind != KindFPDU {
			continue
		}
		n++
		if !errors.Is(it.CheckErr, wire.ErrInvalidRDMAPVersion) || !it.CRCGood() || it.ULPDUErr != nil {
			t.Errorf("%v at %d: check %v", it.ULPDU.Opcode, it.Off, it.CheckErr)
		}
	}
	if n != 7 {
		t.Errorf("%d FPDUs, want 7", n)
	}
}

// TestReplyNotCaptured: with only the Request captured and C clear in it,
// the first FPDU decides whether the Reply turned CRCs on.
func TestReplyNotCaptured(t *testing.T) {
	req, _ := hex.DecodeString("4d504120494420526571204672616d6500010000")
	a, err := assembleText([]*textConn{{recs: []textRecord{
		{initiator: true, off: -1, data: append(req, vectorStream(t, "fpdus.tsv", true)...)},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	c := DecodeConn(a.Conns()[0], Options{})
	if c.Startup || c.CRCDir[0] != CRCAssumedOn || c.Stats[0].CRCGood != 9 || c.Stats[0].Errors != 0 {
		t.Errorf("startup %v CRC %v stats %+v", c.Startup, c.CRCDir[0], c.Stats[0])
	}
}

// TestEachStreams: Each yields items as it walks, stops when asked, and a
// second call decodes afresh.
func TestEachStreams(t *testing.T) {
	b, err := os.ReadFile(vectorDir + "fpdus.tsv")
	if err != nil {
		t.Skip(err)
	}
	a, err := ReadText(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	dc := Open(a.Conns()[0], Options{})
	n := 0
	for it := range dc.Each {
		n++
		if n == 3 {
			if it.Kind != KindFPDU {
				t.Errorf("third item %v", it.Kind)
			}
			break
		}
	}
	total := 0
	prev := 0
	for it := range dc.Each {
		total++
		if it.Frame < prev {
			t.Errorf("frame %d after %d", it.Frame, prev)
		}
		prev = it.Frame
	}
	if total != 15 || dc.Stats[0].FPDUs != 9 || dc.Stats[1].FPDUs != 4 || dc.CRCDir != [2]CRCMode{CRCOn, CRCOn} {
		t.Errorf("%d items, stats %+v, CRC %v", total, dc.Stats, dc.CRCDir)
	}
}

// TestReplyChecks: a Reply the Initiator must refuse (its ORD above the
// Initiator's IRD, RFC 6581 §5) is noted on the connection.
func TestReplyChecks(t *testing.T) {
	text := "req: 4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 10 02 00 04 00 01 00 01\n" +
		"rep: 4d 50 41 20 49 44 20 52 65 70 20 46 72 61 6d 65 10 02 00 04 00 01 00 08\n"
	a, err := ReadText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c := DecodeConn(a.Conns()[0], Options{})
	if h := Header(c); !strings.Contains(h, "the Initiator's checks fail on this Reply (terminate): insufficient IRD resources") {
		t.Errorf("header: %s", h)
	}
}

// TestSiwTerminate decodes the Terminate siw sent to a Responder that
// answered a P2P Request without P2P (interop/captures/
// siw_mpa_request.hex): LLP/0/0x07 in siw's own control layout.
func TestSiwTerminate(t *testing.T) {
	text := "req: 4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 10 02 00 04 80 01 c0 01\n" +
		"rep: 4d 50 41 20 49 44 20 52 65 70 20 46 72 61 6d 65 10 02 00 04 00 01 00 01\n" +
		"req: 00 16 41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 02 07 00 00 00 00 00 00\n"
	a, err := ReadText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	// The third line starts a new connection in this format; rebuild one
	// connection with the Terminate after the Request.
	conns := a.Conns()
	if len(conns) != 2 {
		t.Fatalf("%d connections", len(conns))
	}
	term := conns[1].Dir[0].Runs()[0].Data
	req := conns[0].Dir[0].Runs()[0].Data
	rep := conns[0].Dir[1].Runs()[0].Data
	a, err = assembleText([]*textConn{{recs: []textRecord{
		{initiator: true, off: -1, data: append(append([]byte(nil), req...), term...)},
		{off: -1, data: rep},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	c := DecodeConn(a.Conns()[0], Options{})
	var line string
	for i := range c.Items {
		if c.Items[i].Kind == KindFPDU {
			line = Line(c, &c.Items[i], RenderOptions{})
			if tm := c.Items[i].ULPDU.Terminate; tm.Code != rdma.TermLLPNoRTRModel || tm.Layout != wire.LayoutSiw {
				t.Errorf("Terminate %+v", tm)
			}
		}
	}
	if !strings.Contains(line, "term=LLP/0/0x07(MPA; no matching RTR model) M=0 D=0 R=0 layout=siw(raw 02070000)") {
		t.Errorf("line: %s", line)
	}
}
