package conform

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
)

// scriptStream runs a case's script on a session that sends into memory,
// as after a startup with CRC and markers towards the responder, and
// returns what it sent.
func scriptStream(t *testing.T, c *Case) []byte {
	t.Helper()
	p := mpa.Params{CRC: true, SendMarkers: true}
	sent := &captureConn{}
	s := &Session{Params: p, RV: wire.RDMAPVersion1, nc: sent, out: &captureConn{}}
	s.Advert.Regions[SlotMain] = Region{STag: 0x12301, TO: 0x1000, Len: 1 << 20}
	s.Advert.Have[SlotMain] = true
	s.fw = fpdu.NewConn(s.out, fpdu.Options{CRC: p.CRC, SendMarkers: p.SendMarkers}).Writer()
	if err := c.Script(s); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return sent.buf
}

// TestMarkerCases: every marker case needs markers and, but for the FPDUPTR
// mismatch, CRCs; what each sends reads, for a receiver following RFC 5044
// (fpdu.Reader), as the case prescribes.
func TestMarkerCases(t *testing.T) {
	want := map[string]error{
		"Framing/marker-FPDUPTR-mismatch/LLP-0-0x03":           fpdu.ErrMarker,
		"Framing/marker-before-CRC/accepted":                   io.EOF,
		"Framing/marker-before-CRC-left-out-of-CRC/LLP-0-0x02": fpdu.ErrCRC,
		"Framing/marker-reserved-bits-set/accepted":            io.EOF,
	}
	for _, c := range All() {
		if !strings.Contains(c.Name, "marker") {
			continue
		}
		w, ok := want[c.Name]
		if !ok {
			t.Errorf("%s: a marker case this test does not know", c.Name)
			continue
		}
		delete(want, c.Name)
		if c.Needs&NeedSendMarkers == 0 || (c.Needs&NeedCRC == 0) != strings.Contains(c.Name, "mismatch") {
			t.Errorf("%s: needs %b", c.Name, c.Needs)
		}
		stream := scriptStream(t, c)
		r := fpdu.NewConn(&streamConn{captureConn{buf: stream}}, fpdu.Options{CRC: true, RecvMarkers: true}).Reader()
		var err error
		for err == nil {
			var n int
			if n, err = r.Next(); err == nil {
				if err = r.Discard(n); err == nil {
					err = r.End()
				}
			}
		}
		if !errors.Is(err, w) {
			t.Errorf("%s: a receiver reads %v, want %v", c.Name, err, w)
		}
	}
	for name := range want {
		t.Errorf("no case %s", name)
	}
}

// streamConn serves its buffer to Read.
type streamConn struct{ captureConn }

func (c *streamConn) Read(p []byte) (int, error) {
	if len(c.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}
