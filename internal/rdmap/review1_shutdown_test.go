package rdmap

import (
	"encoding/binary"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/rdma"
)

// shellStep is what a shell does after any call: it writes what the Core
// hands out (all of it) and half-closes when asked; it reports whether the
// Core left the shell anything to act on (a write, a half-close, a close).
func shellStep(c *Core) (acted bool) {
	for c.WantTx() {
		iov := c.TxBufs(nil)
		n := 0
		for _, b := range iov {
			n += len(b)
		}
		c.TxDone(n)
		if n == 0 {
			break
		}
		acted = true
	}
	return acted || c.WantHalfClose() || c.WantClose()
}

// TestReview1TerminateHeldAfterEOF: an MPA Responder (HoldSendUntilReceive)
// whose first received octets are a bad ULPDU_Length decides a Terminate
// (LLP/0/0x02) it may not send yet, since no FPDU header was "heard". The
// peer then closes (RxEOF). Nothing can arrive any more, so the Terminate
// will never be sent and the drain has nothing to wait for; yet the Core
// stays in TERMINATE with WantTx, WantHalfClose and WantClose all false:
// its posted WRs are never flushed and the connection is never closed
// unless the shell's operation timeout happens to be on (Waiting is true).
// RxEOF's contract: "After a Terminate this side sent, it ends the drain."
func TestReview1TerminateHeldAfterEOF(t *testing.T) {
	o := defaults()
	o.framing = fpdu.Options{CRC: true, HoldSendUntilReceive: true}
	c, _, _ := single(t, o)
	if _, err := c.PostRecv([]RecvWR{{ID: 9}}); err != nil {
		t.Fatal(err)
	}
	// ULPDU_Length 3: shorter than any DDP header (ErrULPDUTooShort).
	var bad [8]byte
	binary.BigEndian.PutUint16(bad[:], 3)
	rxAll(c, bad[:], len(bad))
	if c.State() != rdma.StateTerminate {
		t.Fatalf("state %v (%v), want TERMINATE", c.State(), c.Err())
	}
	c.RxEOF(nil)
	if !shellStep(c) {
		t.Fatalf("after the peer's close the Core asks for nothing: state %v, WantTx %v, WantHalfClose %v, WantClose %v, Waiting %v, completions %v",
			c.State(), c.WantTx(), c.WantHalfClose(), c.WantClose(), c.Waiting(), poll(c))
	}
}

// TestReview1TerminateAfterHalfClose: this side disconnected and has
// half-closed (WantHalfClose reported true, so the Core hands out nothing
// more); the peer then sends a violation (here a Send with no receive
// posted) and closes. The Core decides a Terminate it can never send (the
// connection is half-closed), so termWritten never comes: RxEOF leaves it in
// TERMINATE with nothing asked of the shell (no write, no half-close, no
// close) and WRs unflushed; only an operation timeout would end it.
func TestReview1TerminateAfterHalfClose(t *testing.T) {
	c, p, _ := single(t, defaults())
	c.Disconnect()
	if !c.WantHalfClose() {
		t.Fatal("Disconnect with nothing to do: no half-close")
	}
	rxAll(c, p.frame(untagged(3, true, 0, 0, 1, 0)), 64) // a Send, no receive posted
	if c.State() != rdma.StateTerminate {
		t.Fatalf("state %v (%v), want TERMINATE", c.State(), c.Err())
	}
	c.RxEOF(nil)
	if !shellStep(c) {
		t.Fatalf("after the peer's close the Core asks for nothing: state %v, WantTx %v, WantHalfClose %v, WantClose %v, Waiting %v",
			c.State(), c.WantTx(), c.WantHalfClose(), c.WantClose(), c.Waiting())
	}
}

// TestReview1HeldSendNotWaiting: an MPA Responder (HoldSendUntilReceive)
// holds its send queue until the Initiator's first FPDU arrives (RFC 5044
// §7.1.2). Work posted meanwhile waits on the peer, but Waiting reports
// false, so the shell's operation timeout never runs: an Initiator that
// never sends anything leaves the responder's WRs outstanding for ever
// (Waiting's own list: "octets not yet written" — here they are not even
// handed out).
func TestReview1HeldSendNotWaiting(t *testing.T) {
	o := defaults()
	o.framing.HoldSendUntilReceive = true
	c, _, _ := single(t, o)
	post(t, c, SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled})
	if c.WantTx() {
		t.Fatal("sent before the Initiator's first FPDU")
	}
	if !c.Waiting() {
		t.Fatal("a posted Send held until the peer's first FPDU is not Waiting: the operation timeout never runs for it")
	}
}
