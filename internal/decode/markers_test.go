package decode

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
)

// sinkConn collects what a Writer sends.
type sinkConn struct {
	net.Conn // nil: only Write is used
	w        *bytes.Buffer
}

func (s *sinkConn) Write(b []byte) (int, error) { return s.w.Write(b) }

// markerWrite is a tagged RDMA Write ULPDU of n octets in all.
func markerWrite(n int, fill byte) []byte {
	h := wire.DDPHeader{Tagged: true, Last: true, Version: wire.DDPVersion,
		Control: wire.MakeRDMAPControl(wire.RDMAPVersion1, wire.OpWrite), STag: 0x5000}
	u := wire.AppendDDPHeader(nil, &h)
	return append(u, bytes.Repeat([]byte{fill}, n-len(u))...)
}

// markerCRCStream frames, with markers and CRC, a Write of 1000 octets,
// then one whose CRC field starts on a marker position (the marker comes
// first and the CRC covers it, RFC 5044 §4.3, §4.4), then a Write of 100.
// It returns the stream and the FPDUs' stream offsets.
func markerCRCStream(t *testing.T) ([]byte, []int) {
	t.Helper()
	frame := func(lens ...int) []byte {
		var out bytes.Buffer
		w := fpdu.NewConn(&sinkConn{w: &out}, fpdu.Options{CRC: true, SendMarkers: true}).Writer()
		for i, n := range lens {
			if err := w.WriteFPDU(markerWrite(n, byte('a'+i))); err != nil {
				t.Fatal(err)
			}
		}
		return out.Bytes()
	}
	first := len(frame(1000))
	for n := 14; n < 600; n++ {
		s := frame(1000, n)
		if crcAt := len(s) - fpdu.CRCLen; crcAt%fpdu.MarkerInterval == fpdu.MarkerLen {
			// The trailer is the CRC32c of every octet of the FPDU
			// before it, the marker included.
			if got, want := binary.LittleEndian.Uint32(s[crcAt:]), fpdu.CRC32c(s[first:crcAt]); got != want {
				t.Fatalf("the Writer's CRC %08x, want %08x", got, want)
			}
			return frame(1000, n, 100), []int{0, first, len(s)}
		}
	}
	t.Fatal("no length puts the CRC field after a marker")
	return nil, nil
}

// markerConn assembles an MPA startup asking for markers and CRC in the
// Responder's stream, then that stream, cut into the given pieces (gaps
// between them are lost bytes).
func markerConn(t *testing.T, stream []byte, pieces ...[2]int) *Conn {
	t.Helper()
	req, _ := hex.DecodeString("4d504120494420526571204672616d65c0010000") // M=1 C=1
	rep, _ := hex.DecodeString("4d504120494420526570204672616d6540010000") // C=1
	recs := []textRecord{{initiator: true, off: -1, data: req}, {off: 0, data: rep}}
	for _, p := range pieces {
		recs = append(recs, textRecord{off: 20 + p[0], data: stream[p[0]:p[1]]})
	}
	a, err := assembleText([]*textConn{{recs: recs}})
	if err != nil {
		t.Fatal(err)
	}
	return DecodeConn(a.Conns()[0], Options{})
}

// TestMarkerBeforeCRC: the decoder checks the CRC of an FPDU whose CRC
// field follows a marker over that marker, also when it finds the FPDU by
// resynchronising after a gap.
func TestMarkerBeforeCRC(t *testing.T) {
	stream, offs := markerCRCStream(t)
	whole := markerConn(t, stream, [2]int{0, len(stream)})
	if st := whole.Stats[1]; st.FPDUs != 3 || st.CRCGood != 3 || st.CRCBad != 0 || st.BadMarkers != 0 || st.Errors != 0 {
		t.Errorf("whole stream: %+v", st)
	}
	var out strings.Builder
	Render(&out, []*Conn{whole}, RenderOptions{})
	if n := strings.Count(out.String(), "crc=good"); n != 3 || strings.Contains(out.String(), "reserved bits") {
		t.Errorf("%d good CRCs rendered:\n%s", n, out.String())
	}
	// Lose bytes inside the first FPDU: resynchronisation must accept the
	// second FPDU by its CRC, which covers the marker before it.
	gap := markerConn(t, stream, [2]int{0, 100}, [2]int{200, len(stream)})
	var found []uint64
	for _, it := range gap.Items {
		if it.Kind == KindFPDU && it.Dir == 1 && it.FPDUErr == nil && it.CRCGood() {
			found = append(found, it.Off-20)
		}
	}
	if len(found) != 2 || found[0] != uint64(offs[1]) || found[1] != uint64(offs[2]) {
		t.Errorf("FPDUs with good CRCs after the gap at %v, want %v", found, offs[1:])
	}
}

// TestMarkerReservedBits: markers with reserved bits set are accepted (a
// receiver ignores them, RFC 5044 §4.2) and shown.
func TestMarkerReservedBits(t *testing.T) {
	stream, _ := markerCRCStream(t)
	stream = bytes.Clone(stream)
	stream[512] = 0x80 // the second marker's reserved octets
	// The CRC of the first FPDU covers that marker: fix it up.
	end := 1000 + 2 + 2 + 4 + 2*fpdu.MarkerLen
	f, err := fpdu.DecodeFPDU(nil, stream[:end], 0, fpdu.Options{RecvMarkers: true})
	if err != nil || f.Size != end || f.SloppyMarkers != 1 {
		t.Fatalf("first FPDU: %v, %+v", err, f)
	}
	c := f.ComputedCRC
	stream[end-4], stream[end-3], stream[end-2], stream[end-1] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
	dc := markerConn(t, stream, [2]int{0, len(stream)})
	if st := dc.Stats[1]; st.FPDUs != 3 || st.CRCGood != 3 || st.BadMarkers != 0 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}
	var out strings.Builder
	Render(&out, []*Conn{dc}, RenderOptions{})
	if !strings.Contains(out.String(), "markers=2(FPDUPTR ok)(reserved bits set:1)") {
		t.Errorf("rendered:\n%s", out.String())
	}
}
