package rdmap

import (
	"fmt"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// PostSend queues send work requests in order, after validating each
// locally and recording the generation of every SGE's region (the WR may
// use the bytes only while the region stays valid at that generation). It
// stops at the first one that cannot be posted and returns how many were
// posted and why the next failed. Nothing is sent here: TxBufs does it.
func (c *Core) PostSend(wrs []SendWR) (int, error) {
	if c.state != rdma.StateRTS {
		return 0, stateError(c.state, c.err)
	}
	for i := range wrs {
		if err := c.postOneSend(&wrs[i]); err != nil {
			return i, fmt.Errorf("send WR %d (id %d): %w", i, wrs[i].ID, err)
		}
	}
	return len(wrs), nil
}

func (c *Core) postOneSend(wr *SendWR) error {
	depth := uint64(c.cfg.SQDepth)
	if c.sqTail-c.sqFree >= depth {
		return ErrSQFull
	}
	// An unsignaled WR may not take the last free slot: a send queue full
	// of completed unsignaled WRs could never free a slot (only a
	// consumed completion does), so it would wedge silently.
	if wr.Flags&Signaled == 0 && c.sqTail-c.sqFree == depth-1 {
		return ErrSQNeedsSignaled
	}
	total, err := c.checkSend(wr)
	if err != nil {
		return err
	}
	if c.sqTail-c.sqFree >= uint64(len(c.sq)) {
		c.growSQ()
	}
	slot := int(c.sqTail % uint64(len(c.sq)))
	e := &c.sq[slot]
	lo := slot * c.cfg.MaxSGE
	*e = sqEntry{wr: *wr, seq: c.sqTail, size: total}
	if wr.Flags&Inline != 0 && (wr.Op.carriesPayload() || wr.Op.immediate()) {
		if total > uint64(c.cfg.MaxInline) {
			return ErrInlineTooLong
		}
		buf := c.sqInline[slot*c.cfg.MaxInline : slot*c.cfg.MaxInline+int(total)]
		if !copyFromSGL(buf, wr.SGL) {
			return ErrRegionInvalid
		}
		e.wr.SGL = nil
		e.inline = buf
	} else {
		e.wr.SGL = append(c.sqSGE[lo:lo], wr.SGL...)
		e.gens = c.sqGen[lo : lo+len(wr.SGL)]
		for i := range e.wr.SGL {
			e.gens[i] = e.wr.SGL[i].Region.Gen()
		}
	}
	c.sqTail++
	return nil
}

// checkSend validates a send WR against the QP and returns the bytes its
// message carries (a Read: the bytes to read).
func (c *Core) checkSend(wr *SendWR) (uint64, error) {
	switch wr.Op {
	case OpSend, OpSendInv, OpSendSE, OpSendSEInv, OpWrite, OpRead, OpReadInv:
	case OpLocalInv:
		if len(wr.SGL) != 0 {
			return 0, ErrBadSGE
		}
	case OpSendImm, OpSendInvImm, OpSendSEImm, OpSendSEInvImm, OpReadV2:
		// V2 messages go only to a peer that agreed to V2.
		if c.rv != wire.RDMAPVersion2 {
			return 0, ErrNotSupportedByPeer
		}
	case OpFetchAdd, OpCmpSwap, OpImmediate, OpImmediateSE, OpWriteImm, OpWriteImmSE:
		// RFC 7306 messages go only to a peer known to support them
		// (extensions.md §3.1).
		if !c.p.RFC7306 {
			return 0, ErrNotSupportedByPeer
		}
	default:
		return 0, ErrBadOp
	}
	if len(wr.SGL) > c.cfg.MaxSGE {
		return 0, ErrTooManySGE
	}
	var total uint64
	for i := range wr.SGL {
		s := &wr.SGL[i]
		if s.Region == nil || s.bytes() == nil {
			return 0, ErrBadSGE
		}
		if s.Region.PD() != c.cfg.PD {
			return 0, ErrPD
		}
		total += uint64(s.Len)
	}
	if total > MaxMessageSize {
		return 0, ErrMessageSize
	}
	switch {
	case wr.Op.atomic():
		if c.p.ORD == 0 {
			return 0, ErrNoORD
		}
		if wr.RemoteTO%8 != 0 {
			return 0, ErrMisaligned
		}
		if len(wr.SGL) > 1 || (len(wr.SGL) == 1 && (wr.SGL[0].Len < 8 || !wr.SGL[0].Region.Access().LocalWrite())) {
			return 0, ErrBadSGE
		}
		total = 0 // the SGE receives the result; nothing is sent from it
	case wr.Op.immediate():
		if len(wr.SGL) != 0 {
			return 0, ErrBadSGE // Immediate Data carries no payload
		}
	case wr.Op == OpReadV2:
		if c.p.ORD == 0 {
			return 0, ErrNoORD
		}
		for i := range wr.SGL {
			if !wr.SGL[i].Region.Access().LocalWrite() {
				return 0, ErrAccess
			}
		}
	case wr.Op.read():
		if c.p.ORD == 0 {
			return 0, ErrNoORD
		}
		if len(wr.SGL) > 1 {
			return 0, ErrReadSinkSGE
		}
		if len(wr.SGL) == 1 && !wr.SGL[0].Region.Access().LocalWrite() {
			return 0, ErrAccess
		}
	}
	return total, nil
}

// PostRecv posts receive work requests to the Core's own receive queue,
// like PostSend (errors of RecvRing.Post, and ErrPD for a buffer of
// another protection domain). A Core with a shared receive
// queue has none of its own (ErrSharedRecv). Receives are refused once
// the QP left RTS.
func (c *Core) PostRecv(wrs []RecvWR) (int, error) {
	if c.rq == nil {
		return 0, ErrSharedRecv
	}
	if c.state != rdma.StateRTS {
		return 0, stateError(c.state, c.err)
	}
	for i := range wrs {
		if !c.ownPD(wrs[i].SGL) {
			// Post those before it; the ring's own error comes first.
			if n, err := c.rq.Post(wrs[:i]); err != nil {
				return n, err
			}
			return i, ErrPD
		}
	}
	return c.rq.Post(wrs)
}

// ownPD reports whether every region of sgl is in the QP's protection
// domain (an SGE without a region is the ring's to refuse).
func (c *Core) ownPD(sgl []SGE) bool {
	for i := range sgl {
		if r := sgl[i].Region; r != nil && r.PD() != c.cfg.PD {
			return false
		}
	}
	return true
}
