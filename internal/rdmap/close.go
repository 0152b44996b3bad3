package rdmap

import (
	"errors"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// Close tears the QP down at once: state ERROR, the first error kept (or
// ErrLocallyClosed), every work request not complete flushed exactly once,
// in order. The shell closes the connection (no Terminate). Leases and
// pins still held for buffers handed out by TxBufs or RxBuf end at the
// following TxDone or RxDone.
func (c *Core) Close() { c.toError(ErrLocallyClosed) }

// Fail fails the QP with a local fatal error (a socket error, the
// operation timeout): state ERROR, flush, no Terminate. The error is
// recorded as a *ConnectionError unless it is one already, and only if
// it is the first. Fail(nil) is Close.
func (c *Core) Fail(err error) {
	if err == nil {
		c.Close()
		return
	}
	var ce *ConnectionError
	if !errors.As(err, &ce) {
		err = &ConnectionError{Err: err}
	}
	c.toError(err)
}

// Revoke is mem.Holder's: an invalidation or deregistration waited too
// long for a lease this QP holds. The QP fails (ErrLeaseRevoked) and gives
// its leases up at once, or at the next TxDone if TxBufs handed out
// iovecs that may reference the region; the shell must close the
// connection (WantClose) so that a write in progress ends. A shell that
// locks the Core calls it under its lock (Config.Holder).
func (c *Core) Revoke(*mem.Region) { c.Fail(ErrLeaseRevoked) }

// Disconnect closes the QP in order (the CLOSING state of
// docs/spec/rdmap.md §3): no new work requests are accepted; those posted are
// transmitted and complete (Reads included) and the peer's requests are
// answered; then WantHalfClose reports true, the shell half-closes the
// connection, and once the peer has closed its side (RxEOF) the QP goes to
// ERROR (ErrDisconnected), flushing the receives still posted. In any
// state but RTS it does nothing.
func (c *Core) Disconnect() {
	if c.state == rdma.StateRTS {
		c.state = rdma.StateClosing
	}
}

// WantHalfClose reports whether the shell should close its side of the
// connection (shutdown(SHUT_WR)) and keep reading: the Terminate this side
// sent has been written (then read and discard input for a bounded time,
// and close), or Disconnect has drained everything. Once it has reported
// true the Core hands out no more output (a request of the peer's that
// crosses the half-close stays unanswered: the peer sees the close).
func (c *Core) WantHalfClose() bool {
	switch c.state {
	case rdma.StateClosing:
		if !c.shut {
			c.shut = c.sqDone == c.sqTail && c.irq.len() == 0 && c.tx.cur.kind == txNone &&
				c.tx.enc.Buffered() == 0 && !c.tx.out
		}
		return c.shut
	case rdma.StateTerminate:
		return c.termWanted && c.termWritten
	}
	return false
}

// WantClose reports whether the shell should close the connection now:
// the QP is in ERROR (closed, failed, the peer's end of stream, the drain
// after a Terminate over), or the peer sent a Terminate (once the octets
// TxBufs handed out were reported by TxDone). The shell then
// calls Close (which keeps the first error) if the QP is not in ERROR yet.
func (c *Core) WantClose() bool {
	switch c.state {
	case rdma.StateError:
		return true
	case rdma.StateTerminate:
		// The peer's Terminate, once no write is in progress: it may
		// answer octets the socket accepted and TxDone has not reported
		// yet, and the work requests they finish complete (a Send or
		// Write completes when handed to TCP) before the rest is flushed.
		return !c.termWanted && !c.tx.out
	}
	return false
}

// Waiting reports whether the Core waits on the peer: octets not yet
// written, work held until the peer's first FPDU
// (Framing.HoldSendUntilReceive), a response awaited, an FPDU received in part, the peer's close
// after Disconnect, or the drain after a Terminate. The shell's operation
// timeout runs only then, and fails the QP (Fail) when Progress has not
// moved for that long.
func (c *Core) Waiting() bool {
	switch c.state {
	case rdma.StateError:
		return false
	case rdma.StateTerminate:
		return c.termWanted
	}
	return c.tx.enc.Buffered() > 0 || c.orq.len() > 0 || c.rx.d.Mid() || c.WantHalfClose() || c.heldBack()
}

// heldBack reports whether work waits for the Initiator's first FPDU
// (Framing.HoldSendUntilReceive): a send WR posted and not started.
func (c *Core) heldBack() bool {
	return c.cfg.Framing.HoldSendUntilReceive && !c.rx.heard && (c.sqNext != c.sqTail || c.tx.cur.kind != txNone)
}

// toError moves the QP to ERROR, recording err if it is the first error,
// and flushes every outstanding work request once.
func (c *Core) toError(err error) {
	if c.err == nil {
		c.err = err
	}
	if c.state == rdma.StateError {
		return
	}
	c.state = rdma.StateError
	c.rx.abandon()
	c.flush()
	c.releaseTx()
}

// flush completes every outstanding work request: the oldest incomplete
// send WR with the status a received Terminate gives it, the others (and
// all receives) as flushed, in posting order. The Core's own receive queue
// is emptied; a shared one keeps its receives for its other QPs.
func (c *Core) flush() {
	first := true
	var te *TerminateError
	peerTerm := errors.As(c.err, &te) && !te.Sent
	for seq := c.sqDone; seq < c.sqTail; seq++ {
		e := c.entry(seq)
		if e.complete {
			continue
		}
		e.complete, e.status, e.err = true, rdma.StatusFlushed, c.err
		if first && peerTerm {
			e.status = remoteStatus(te.Code)
		}
		first = false
	}
	c.sqNext = c.sqTail
	c.advanceSQ()
	rx := &c.rx
	if rx.sendActive {
		c.flushRecv(rx.send.wr.ID, rx.send.slot)
		rx.sendActive = false
	}
	if rx.immActive {
		c.flushRecv(rx.immRecv.wr.ID, rx.immRecv.slot)
		rx.immActive = false
	}
	if c.rq != nil {
		for {
			wr, _, slot, ok := c.rq.Take()
			if !ok {
				break
			}
			c.flushRecv(wr.ID, slot)
		}
	}
	for c.irq.len() > 0 {
		c.irq.at(0).endLease(c.holder)
		c.irq.pop()
	}
	// The atomics left will never run: what waited for them goes on.
	c.atomicsRun = c.atomicsIn
	if c.rcq.len() > 0 {
		c.advanceRecv()
	}
	for c.orq.len() > 0 {
		c.orq.pop()
	}
	rx.irqNew.endLease(c.holder) // a request whose FPDU did not end well
	rx.irqNew = irqEntry{}
}

// flushRecv reports a receive as flushed.
func (c *Core) flushRecv(id, slot uint64) {
	c.pushRecv(Completion{Queue: RecvQueue, Slot: slot, Completion: rdma.Completion{ID: id, Op: rdma.OpRecv, Status: rdma.StatusFlushed, Err: c.err}}, nil)
}
