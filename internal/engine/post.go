package engine

import (
	"errors"
	"fmt"

	"github.com/goiwarp/iwarp/internal/wire"
)

// PostSend queues send work requests in order. It stops at the first one
// that cannot be posted and returns how many were posted and why the next
// failed. Posting never blocks on the network: the transmit path takes the
// work from here (see tx.go).
func (qp *QP) PostSend(wrs []SendWR) (int, error) {
	qp.mu.Lock()
	n, err := qp.postSendLocked(wrs)
	qp.mu.Unlock()
	if n > 0 {
		qp.kick()
	}
	return n, err
}

func (qp *QP) postSendLocked(wrs []SendWR) (int, error) {
	if qp.state != StateRTS {
		if qp.state == StateIdle {
			return 0, ErrNotConnected
		}
		return 0, stateError(qp.state, qp.err)
	}
	for i := range wrs {
		if err := qp.postOneSend(&wrs[i]); err != nil {
			return i, fmt.Errorf("send WR %d (id %d): %w", i, wrs[i].ID, err)
		}
	}
	return len(wrs), nil
}

func (qp *QP) postOneSend(wr *SendWR) error {
	depth := uint64(len(qp.sq))
	if qp.sqTail-qp.sqFree >= depth {
		return ErrSQFull
	}
	// An unsignaled WR may not take the last free slot: a send queue full
	// of completed unsignaled WRs could never free a slot (only a polled
	// completion does), so it would wedge silently.
	if wr.Flags&Signaled == 0 && wr.Waiter == nil && qp.sqTail-qp.sqFree == depth-1 {
		return ErrSQNeedsSignaled
	}
	switch wr.Op {
	case OpSend, OpSendInv, OpSendSE, OpSendSEInv, OpWrite, OpRead, OpReadInv:
	case OpLocalInv:
		if len(wr.SGL) != 0 {
			return ErrBadSGE
		}
	case OpSendImm, OpSendInvImm, OpSendSEImm, OpSendSEInvImm, OpReadV2:
		// V2 messages go only to a peer that agreed to V2.
		if qp.rv != wire.RDMAPVersion2 {
			return ErrNotSupportedByPeer
		}
	case OpFetchAdd, OpCmpSwap, OpImmediate, OpImmediateSE, OpWriteImm, OpWriteImmSE:
		// RFC 7306 messages go only to a peer known to support them
		// (extensions.md §3.1).
		if !qp.p.RFC7306 {
			return ErrNotSupportedByPeer
		}
	default:
		return ErrBadOp
	}
	if len(wr.SGL) > qp.cfg.MaxSGE {
		return ErrTooManySGE
	}
	var total uint64
	for i := range wr.SGL {
		s := &wr.SGL[i]
		if s.Region == nil || s.bytes() == nil {
			return ErrBadSGE
		}
		total += uint64(s.Len)
	}
	if total > MaxMessageSize {
		return ErrMessageSize
	}
	if wr.Op.atomic() {
		if qp.p.ORD == 0 {
			return ErrNoORD
		}
		if wr.RemoteTO%8 != 0 {
			return ErrMisaligned
		}
		if len(wr.SGL) > 1 || (len(wr.SGL) == 1 && (wr.SGL[0].Len < 8 || !wr.SGL[0].Region.Access().LocalWrite())) {
			return ErrBadSGE
		}
		total = 0 // the SGE receives the result; nothing is sent from it
	}
	if wr.Op == OpImmediate || wr.Op == OpImmediateSE {
		if len(wr.SGL) != 0 {
			return ErrBadSGE // Immediate Data carries no payload
		}
	}
	if wr.Op == OpReadV2 {
		if qp.p.ORD == 0 {
			return ErrNoORD
		}
		for i := range wr.SGL {
			if !wr.SGL[i].Region.Access().LocalWrite() {
				return ErrAccess
			}
		}
	}
	if wr.Op.read() {
		if qp.p.ORD == 0 {
			return ErrNoORD
		}
		if len(wr.SGL) > 1 {
			return ErrReadSinkSGE
		}
		if len(wr.SGL) == 1 && !wr.SGL[0].Region.Access().LocalWrite() {
			return ErrAccess
		}
	}
	slot := qp.sqTail % depth
	e := &qp.sq[slot]
	sgl := qp.sqSGE[int(slot)*qp.cfg.MaxSGE : int(slot)*qp.cfg.MaxSGE : int(slot+1)*qp.cfg.MaxSGE]
	*e = sqEntry{wr: *wr, seq: qp.sqTail}
	if wr.Flags&Inline != 0 && !wr.Op.read() && !wr.Op.atomic() && wr.Op != OpReadV2 {
		if total > uint64(qp.cfg.MaxInline) {
			return ErrInlineTooLong
		}
		buf := qp.sqInline[int(slot)*qp.cfg.MaxInline : int(slot)*qp.cfg.MaxInline+int(total)]
		off := 0
		for i := range wr.SGL {
			off += copy(buf[off:], wr.SGL[i].bytes())
		}
		e.wr.SGL = nil
		e.inline = buf
	} else {
		e.wr.SGL = append(sgl, wr.SGL...)
	}
	e.size = total
	if wr.Waiter == nil && wr.Flags&Signaled != 0 && !wr.Op.outbound() {
		e.txSignaled = true // completes to the send CQ from the transmit path
		qp.txSignaled++
	}
	qp.sqTail++
	return nil
}

// PostRecv posts receive work requests in order, like PostSend. Receives
// may be posted before the QP is connected. A QP with a shared receive
// queue has none of its own (ErrSRQAttached).
func (qp *QP) PostRecv(wrs []RecvWR) (int, error) {
	if qp.srq != nil {
		return 0, ErrSRQAttached
	}
	qp.mu.Lock()
	state, err := qp.state, qp.err
	qp.mu.Unlock()
	if state != StateIdle && state != StateRTS {
		return 0, stateError(state, err)
	}
	n, err := qp.rq.post(wrs, ErrRQFull)
	if errors.Is(err, errRQClosed) {
		// The QP was torn down after the check above: flushAll closed
		// the queue (under qp.mu, so the state now says why).
		qp.mu.Lock()
		state, err = qp.state, qp.err
		qp.mu.Unlock()
		return n, stateError(state, err)
	}
	return n, err
}

// sqRelease frees the slot of the send WR seq, whose completion was
// consumed, and the slots of the unsignaled WRs before it (verbs: an
// unsignaled WR's slot is freed by a later signaled completion). Slots are
// reused in order, so the free pointer advances over released entries only.
func (qp *QP) sqRelease(seq uint64) {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if seq < qp.sqFree || seq >= qp.sqDone {
		return
	}
	d := uint64(len(qp.sq))
	qp.sq[seq%d].released = true
	for s := seq; s > qp.sqFree; s-- {
		e := &qp.sq[(s-1)%d]
		if e.cqe {
			break
		}
		e.released = true
	}
	for qp.sqFree < qp.sqDone && qp.sq[qp.sqFree%d].released {
		qp.sqFree++
	}
}

// ReleaseWaited frees the send-queue slot of a WR whose completion went to
// its Waiter.
func (qp *QP) ReleaseWaited(c *CQE) { qp.sqRelease(c.sqSeq) }

// stateError is ErrQPState for a QP in state, with the error that took it
// out of RTS when there is one.
func stateError(state State, err error) error {
	if err == nil {
		return fmt.Errorf("%w (%v)", ErrQPState, state)
	}
	return fmt.Errorf("%w (%v): %w", ErrQPState, state, err)
}
