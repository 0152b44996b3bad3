package rdmap

import (
	"bytes"
	"testing"

	"github.com/goiwarp/iwarp/internal/wire"
)

// TestReview1TerminateCarriesHeaderAsReceived: RFC 5040 §4.8 attaches "the
// DDP Segment Header" of the offending segment to the Terminate (D bit). A
// peer may set the DDP control's reserved bits (RFC 5041 §5.1: "set to zero
// on transmit, not checked on receive"); the Core re-encodes the parsed
// header instead of copying it, so the header it attaches is not the one
// that arrived (the reserved bits are lost), and a peer or a capture
// cannot match the Terminate to its segment.
func TestReview1TerminateCarriesHeaderAsReceived(t *testing.T) {
	review1Finding(t, 3, "the Terminate's attached DDP header is re-encoded, not the offending one (reserved bits lost)")
	e := newTermEnv(t, defaults())
	bad := cat(tagged(0, true, stagOf(e.write)^0xff, e.write.Base()), []byte("data"))
	bad[0] |= 0x3C // the four reserved bits of the DDP control field
	rxAll(e.c, e.p.frame(bad), 5)
	got := e.p.recv(txAll(e.c))
	if len(got) == 0 {
		t.Fatalf("no Terminate: %v (%v)", e.c.State(), e.c.Err())
	}
	want := termULPDU(wire.TermDDPInvalidSTag, bad, 14, false)
	if term := got[len(got)-1]; !bytes.Equal(term, want) {
		t.Fatalf("Terminate\n got % x\nwant % x", term, want)
	}
}
