package rdmap

import (
	"errors"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The error path (docs/spec/rdmap.md §3): the first error wins; a
// violation found in what the peer sent is reported to it with a
// Terminate at the next FPDU boundary of the transmit stream (the
// message in progress is cut there), after which the QP only drains
// input: the shell half-closes once the Terminate was written
// (WantHalfClose), reads and discards input for a bounded time so that
// closing does not reset the connection before the Terminate arrives,
// then closes and calls Close (or the peer's end of stream, RxEOF, ends
// the drain), which flushes every outstanding work request.

// termDDP is the Terminate for a violation in the segment being received:
// it carries the segment's DDP header as received (D; RFC 5040 §4.8: the
// octets themselves, reserved bits included, not a re-encoding) and its
// length (M). err must be a *wire.ProtocolError.
func (c *Core) termDDP(err error) *TerminateError {
	var pe *wire.ProtocolError
	errors.As(err, &pe)
	return &TerminateError{Sent: true, Code: pe.Code, Cause: err, segLen: uint16(c.rx.n), ddpHdr: append([]byte(nil), c.rx.hraw...)}
}

// termRDMA is the Terminate for a violation in a received Read Request: it
// also carries the request's RDMA header (R).
func (c *Core) termRDMA(err error, rdma []byte) *TerminateError {
	te := c.termDDP(err)
	te.rdmaHdr = append([]byte(nil), rdma...)
	return te
}

// terminate fails the QP with a violation of the peer's: the Terminate te
// goes out at the next FPDU boundary; input is drained from now on.
func (c *Core) terminate(te *TerminateError) {
	if c.err != nil || c.state == rdma.StateError {
		return
	}
	c.err, c.state = te, rdma.StateTerminate
	c.termDue, c.termWanted = te, true
	if c.shut {
		// This side has half-closed: the Terminate can never go. Input is
		// drained as after one written (WantHalfClose holds) until the
		// peer's close or the shell's timeout.
		c.termDue, c.termWritten = nil, true
	}
	c.rx.abandon()
}

// peerTerminated fails the QP with the peer's Terminate: nothing more is
// sent or received, and the shell closes the connection (WantClose).
func (c *Core) peerTerminated(te *TerminateError) {
	if c.err != nil || c.state == rdma.StateError {
		return
	}
	c.err, c.state = te, rdma.StateTerminate
	c.rx.abandon()
	c.releaseTx() // what is queued is not sent (at the next TxDone if iovecs are out)
}

// streamError fails the QP with an error of the received stream: a
// framing violation (a *wire.ProtocolError of the fpdu package: bad CRC,
// marker or length, a truncated FPDU) is reported with a Terminate that
// carries no header; anything else fails the QP without one.
func (c *Core) streamError(err error) {
	// The peer's first FPDU may be the broken one: it has arrived all the
	// same, so the MPA Responder's hold (RFC 5044 §7.1.2) lets the
	// Terminate go.
	c.rx.heard = true
	var pe *wire.ProtocolError
	if !errors.As(err, &pe) {
		c.toError(&ConnectionError{Err: err})
		return
	}
	if pe.Code == rdma.TermLLPCRC {
		c.stats.CRCErrors++
	}
	c.terminate(&TerminateError{Sent: true, Code: pe.Code, Cause: pe})
}

// appendTerminate hands the due Terminate to the Encoder, after the FPDUs
// already queued: the message in progress is cut at this FPDU boundary
// (its referenced octets stay leased until consumed).
func (c *Core) appendTerminate() {
	t := &c.tx
	te := c.termDue
	c.termDue = nil
	c.sealLeases()
	t.cur = txMsg{}
	b := c.lastHdr(wire.OpTerminate, wire.QNTerminate, t.msn[wire.QNTerminate], 0, 0)
	t.msn[wire.QNTerminate]++
	c.stats.termSent[termIndex(te.Code)]++
	wt := te.wireTerminate()
	b = wire.AppendTerminate(b, &wt)
	if c.emit(b, true) {
		t.events.push(txEvent{at: t.appended, kind: evTerm})
	}
}

// rxTerminate reads the peer's Terminate (its header is staged: rest
// octets, at most maxTermLen) and fails the QP with it.
func (c *Core) rxTerminate(b []byte) {
	t, err := wire.ParseTerminate(b)
	te := &TerminateError{Sent: false, Code: t.Code, Layout: t.Layout, Control: t.Control}
	c.stats.termRecv[termIndex(t.Code)]++
	if t.Layout == wire.LayoutSiw {
		c.stats.SiwTerminates++
	}
	if err != nil {
		te.Cause = err
	}
	if len(b) > 0 && err == nil && t.Code.Layer() == 0 && !t.Code.Known() {
		te.Cause = wire.NewProtocolError("unknown Terminate code", t.Code)
	}
	c.peerTerminated(te)
}

// maxTermLen is the longest Terminate header read: the control field, the
// DDP Segment Length, an untagged DDP header and a Read Request header. A
// longer Terminate carries nothing more that is read.
const maxTermLen = wire.TermControlLen + wire.TermSegLenLen + wire.UntaggedHdrLen + wire.TermRDMAHeaderLen

// terminatedByPeer reports whether the peer's Terminate ended the stream:
// nothing more is handed out to send.
func (c *Core) terminatedByPeer() bool {
	return c.state == rdma.StateTerminate && !c.termWanted
}
