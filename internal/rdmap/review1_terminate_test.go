package rdmap

import (
	"bytes"
	"testing"

	"github.com/goiwarp/iwarp/rdma"
)

// TestReview1TerminateCarriesHeaderAsReceived: RFC 5040 §4.8 attaches "the
// DDP Segment Header" of the offending segment to the Terminate (D bit). A
// peer may set the DDP control's reserved bits (RFC 5041 §5.1: "set to zero
// on transmit, not checked on receive"); the Core re-encodes the parsed
// header instead of copying it, so the header it attaches is not the one
// that arrived (the reserved bits are lost), and a peer or a capture
// cannot match the Terminate to its segment.
func TestReview1TerminateCarriesHeaderAsReceived(t *testing.T) {
	e := newTermEnv(t, defaults())
	bad := cat(tagged(0, true, stagOf(e.write)^0xff, e.write.Base()), []byte("data"))
	bad[0] |= 0x3C // the four reserved bits of the DDP control field
	rxAll(e.c, e.p.frame(bad), 5)
	got := e.p.recv(txAll(e.c))
	if len(got) == 0 {
		t.Fatalf("no Terminate: %v (%v)", e.c.State(), e.c.Err())
	}
	want := termULPDU(rdma.TermDDPInvalidSTag, bad, 14, false)
	if term := got[len(got)-1]; !bytes.Equal(term, want) {
		t.Fatalf("Terminate\n got % x\nwant % x", term, want)
	}
}

// TestReview1OutputAfterPeerTerminate: the peer's Terminate ends the
// stream: "nothing more is sent or received" (peerTerminated), WantClose
// at once (TestTerminateReceived checks this with nothing queued). With
// part of a long Send still queued in the Encoder when the Terminate
// arrives, WantTx stays true and TxBufs keeps handing out the rest of the
// message, so a shell that writes whatever WantTx offers before it looks
// at WantClose sends FPDUs to a peer that has terminated the stream.
func TestReview1OutputAfterPeerTerminate(t *testing.T) {
	e := newTermEnv(t, defaults())
	src := region(t, e.table, testPD, 64<<10, 's', 0)
	post(t, e.c, SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}})
	iov := e.c.TxBufs(nil)
	e.c.TxDone(len(iov[0]) / 2) // the socket took part of the first iovec
	code := rdma.TermRDMAPInvalidSTag
	term := cat(untagged(7, true, 0, 2, 1, 0), []byte{byte(code.Layer())<<4 | byte(code.Type()), code.Code(), 0, 0})
	rxAll(e.c, e.p.frame(term), 64)
	if !e.c.WantClose() {
		t.Fatalf("no WantClose after the peer's Terminate: %v", e.c.State())
	}
	if e.c.WantTx() || len(txAll(e.c)) != 0 {
		t.Fatal("output after the peer's Terminate")
	}
}
