package engine

import (
	"errors"
	"time"

	"github.com/goiwarp/iwarp/internal/wire"
)

// The error path (docs/spec/rdmap.md §3): the first error wins; a
// violation found locally is reported to the peer with a Terminate at the
// next FPDU boundary of the transmit stream, followed by a half-close; the
// receive side reads and discards input for a bounded time so that closing
// does not reset the connection before the Terminate arrives; then the
// connection is closed and every outstanding work request completes with a
// flush status.

// fail records the first error and moves the QP out of RTS. With sendTerm
// the error is a *TerminateError to send to the peer.
func (qp *QP) fail(err error, sendTerm bool) {
	qp.mu.Lock()
	if qp.err != nil {
		qp.mu.Unlock()
		return
	}
	qp.err = err
	var te *TerminateError
	if errors.As(err, &te) {
		qp.state = StateTerminate
		if sendTerm {
			qp.termDue, qp.termWanted = te, true
		}
	} else if qp.state != StateClosing {
		qp.state = StateError
	}
	qp.mu.Unlock()
	qp.kickRx() // the receive goroutine reads again (rxrole.go)
	if sendTerm {
		qp.kickAsync()
	}
}

// sendTerminateIfDue is called by the transmit role between FPDUs. It sends
// a due Terminate, and reports true when transmission must stop.
func (qp *QP) sendTerminateIfDue() bool {
	qp.mu.Lock()
	te, state := qp.termDue, qp.state
	qp.termDue = nil
	qp.mu.Unlock()
	if te == nil {
		if state == StateRTS || state == StateClosing {
			return false
		}
		qp.tx.stop = true
		return true
	}
	t := &qp.tx
	t.stop = true
	h := wire.DDPHeader{
		Version: wire.DDPVersion, Last: true,
		Control: wire.MakeRDMAPControl(qp.rv, wire.OpTerminate),
		QN:      wire.QNTerminate, MSN: t.msn[wire.QNTerminate],
	}
	t.msn[wire.QNTerminate]++
	i := termIndex(te.Code)
	qp.count(func(c *Counters) { c.termSent[i].Add(1) })
	wt := te.wireTerminate()
	b := wire.AppendDDPHeader(make([]byte, 0, 96), &h)
	b = wire.AppendTerminate(b, &wt)
	w := qp.conn.Writer()
	_ = qp.conn.NetConn().SetWriteDeadline(time.Now().Add(qp.cfg.DrainTimeout))
	if err := w.Append(b); err == nil {
		qp.countSent(len(b))
		_ = w.Flush()
	}
	if cw, ok := qp.conn.NetConn().(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	close(qp.termSent)
	return true
}

// teardown runs once, on the receive goroutine, when the stream has ended:
// it lets a due Terminate go out, drains input for a bounded time, closes
// the connection, waits for the transmit role, and flushes every queue.
func (qp *QP) teardown() {
	// termWanted, not termDue: the transmit goroutine may already have
	// taken and written the Terminate, which is then still in the socket's
	// send buffer; closing with unread input now would make Linux send an
	// RST and discard it.
	qp.mu.Lock()
	sending := qp.termWanted
	qp.mu.Unlock()
	nc := qp.conn.NetConn()
	if sending {
		deadline := time.Now().Add(qp.cfg.DrainTimeout)
		_ = nc.SetReadDeadline(deadline)
		var scratch [4096]byte
		for {
			if _, err := nc.Read(scratch[:]); err != nil {
				break
			}
		}
		select {
		case <-qp.termSent:
		case <-time.After(time.Until(deadline)):
		}
	}
	_ = qp.conn.Close()
	qp.stopWatchdog()
	qp.stopRxRole()
	qp.takeTxRole()
	qp.flushAll()
	close(qp.done)
	if qp.cfg.OnDone != nil {
		qp.cfg.OnDone(qp)
	}
}

// takeTxRole waits until no goroutine transmits and keeps the role, so
// nothing touches a work request's buffers once it is flushed.
func (qp *QP) takeTxRole() {
	t := &qp.tx
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.final {
		return
	}
	for t.busy {
		t.cond.Wait()
	}
	t.busy, t.stop, t.final = true, true, true
}

// flushAll completes every outstanding work request: the oldest incomplete
// send WR with the status a received Terminate gives it, the others (and all
// receives) as flushed. Completions stay in posting order.
func (qp *QP) flushAll() {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	first := true
	for seq := qp.sqDone; seq < qp.sqTail; seq++ {
		e := &qp.sq[seq%uint64(len(qp.sq))]
		if e.complete {
			continue
		}
		e.complete = true
		e.status, e.err = StatusFlushed, qp.err
		if first {
			first = false
			var te *TerminateError
			if errors.As(qp.err, &te) && !te.Sent {
				e.status = remoteStatus(te.Code)
			}
		}
	}
	qp.sqNext = qp.sqTail
	qp.advanceCompletionsLocked()
	flushRecv := func(e *rqEntry) {
		c := CQE{ID: e.wr.ID, QP: qp, Op: OpRecv, Status: StatusFlushed, Err: qp.err, rq: qp.rq, rqSeq: e.seq}
		qp.cfg.RecvCQ.push(&c)
	}
	// A receive a message had taken but not completed (this runs on the
	// receive goroutine, which owns rx).
	if qp.rx.sendEntry != nil {
		flushRecv(qp.rx.sendEntry)
		qp.rx.sendEntry, qp.rx.sendActive = nil, false
	}
	if qp.rx.immEntry != nil {
		flushRecv(qp.rx.immEntry)
		qp.rx.immEntry = nil
	}
	// The QP's own receives are flushed; an SRQ's stay for its other QPs.
	if qp.srq == nil {
		qp.rq.takeAll(flushRecv)
	}
	for qp.irq.len() > 0 {
		qp.irq.at(0).release()
		qp.irq.pop()
	}
	// Responses written but never flushed (the transmit role is held
	// here: takeTxRole) still pin their source.
	for i := range qp.tx.pend {
		if m := &qp.tx.pend[i]; m.pin != nil {
			m.pin.Release()
			m.pin = nil
		}
	}
	// A request accepted by the receive goroutine whose FPDU then failed
	// its CRC check still pins its region (flushAll runs on that goroutine).
	qp.rx.irqNew.release()
	if qp.rx.atomicRegion != nil {
		qp.rx.atomicRegion.Release()
		qp.rx.atomicRegion = nil
	}
	qp.irqSent, qp.irdInUse = 0, 0
	for qp.orq.len() > 0 {
		qp.orq.pop()
	}
	qp.state = StateError
}

// remoteStatus maps the code of a Terminate the peer sent to the status of
// the work request it most likely concerns.
func remoteStatus(c wire.TermCode) Status {
	switch {
	case c.Layer == wire.LayerRDMAP && c.Type == wire.TypeRemoteProtection,
		c.Layer == wire.LayerDDP && c.Type == wire.TypeTaggedBuffer:
		return StatusRemoteAccess
	}
	return StatusRemoteOperation
}
