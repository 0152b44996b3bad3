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
	if wr.Flags&rdma.Signaled == 0 && c.sqTail-c.sqFree == depth-1 {
		return ErrSQNeedsSignaled
	}
	if len(wr.SGL) > c.cfg.MaxSGE {
		return ErrTooManySGE
	}
	if c.sqTail-c.sqFree >= uint64(len(c.sq)) {
		c.growSQ()
	}
	slot := int(c.sqTail % uint64(len(c.sq)))
	lo := slot * c.cfg.MaxSGE
	gens := c.sqGen[lo : lo+len(wr.SGL)]
	sgl, err := resolveSGL(c.cfg.Table, c.cfg.PD, c.sqSGE[lo:lo], gens, wr.SGL)
	if err != nil {
		return err
	}
	total, err := c.checkSend(wr, sgl)
	if err != nil {
		return err
	}
	e := &c.sq[slot]
	*e = sqEntry{wr: withoutSGL(wr), seq: c.sqTail, size: total}
	if wr.Flags&rdma.Inline != 0 && (carriesPayload(wr) || immediate(wr)) {
		if total > uint64(c.cfg.MaxInline) {
			return ErrInlineTooLong
		}
		buf := c.sqInline[slot*c.cfg.MaxInline : slot*c.cfg.MaxInline+int(total)]
		if !copyFromSGL(buf, sgl, gens) {
			return ErrRegionInvalid
		}
		e.inline = buf
	} else {
		e.sgl, e.gens = sgl, gens
	}
	c.sqTail++
	return nil
}

// withoutSGL returns a copy of wr without its SGL: the queue keeps the
// resolved copy, and not keeping the caller's slice lets a caller's SGL
// live on its stack (no allocation per post).
func withoutSGL(wr *SendWR) SendWR {
	return SendWR{ID: wr.ID, Op: wr.Op, Flags: wr.Flags, Remote: wr.Remote, InvalidateSTag: wr.InvalidateSTag,
		Window: wr.Window, Access: wr.Access, Immediate: wr.Immediate, Add: wr.Add, AddMask: wr.AddMask,
		Compare: wr.Compare, CompareMask: wr.CompareMask, Swap: wr.Swap, SwapMask: wr.SwapMask}
}

// checkSend validates a send WR, whose SGL resolved to sgl, against the QP
// and returns the bytes its message carries (a Read: the bytes to read).
func (c *Core) checkSend(wr *SendWR, sgl []Seg) (uint64, error) {
	if !rdma.ValidFlags(wr.Op, wr.Flags) || wr.Op == rdma.OpRecv {
		return 0, ErrBadOp
	}
	switch rdma.Extension(wr.Op, wr.Flags) {
	case rdma.ExtV2:
		// V2 messages go only to a peer that agreed to V2.
		if c.rv != wire.RDMAPVersion2 {
			return 0, ErrNotSupportedByPeer
		}
	case rdma.ExtRFC7306:
		// RFC 7306 messages go only to a peer known to support them
		// (docs/extensions.md).
		if !c.p.RFC7306 {
			return 0, ErrNotSupportedByPeer
		}
	}
	if wr.Op == rdma.OpLocalInvalidate && len(sgl) != 0 {
		return 0, ErrBadSGE
	}
	if read(wr) && wr.Flags&rdma.Invalidate != 0 && len(sgl) == 0 {
		return 0, ErrBadSGE // Read with Invalidate invalidates its sink: it needs one
	}
	if wr.Op == rdma.OpBindWindow {
		return 0, c.checkBind(wr, sgl) // nothing is sent
	}
	var total uint64
	for i := range sgl {
		total += uint64(sgl[i].Len)
	}
	if total > MaxMessageSize {
		return 0, ErrMessageSize
	}
	switch {
	case atomic(wr):
		if c.p.ORD == 0 {
			return 0, ErrNoORD
		}
		if wr.Remote.TO%8 != 0 {
			return 0, ErrMisaligned
		}
		if len(sgl) > 1 || (len(sgl) == 1 && (sgl[0].Len < 8 || !sgl[0].Region.Access().LocalWrite())) {
			return 0, ErrBadSGE
		}
		total = 0 // the SGE receives the result; nothing is sent from it
	case immediate(wr):
		if len(sgl) != 0 {
			return 0, ErrBadSGE // Immediate Data carries no payload
		}
	case wr.Op == rdma.OpReadV2:
		if c.p.ORD == 0 {
			return 0, ErrNoORD
		}
		for i := range sgl {
			if !sgl[i].Region.Access().LocalWrite() {
				return 0, ErrAccess
			}
		}
	case read(wr):
		if c.p.ORD == 0 {
			return 0, ErrNoORD
		}
		if len(sgl) > 1 {
			return 0, ErrReadSinkSGE
		}
		if len(sgl) == 1 && !sgl[0].Region.Access().LocalWrite() {
			return 0, ErrAccess
		}
	}
	return total, nil
}

// PostRecv posts receive work requests to the Core's own receive queue,
// like PostSend (the errors of RecvRing.Post). A Core with a shared receive
// queue has none of its own (ErrSharedRecv). Receives are refused once
// the QP left RTS.
func (c *Core) PostRecv(wrs []RecvWR) (int, error) {
	if c.rq == nil {
		return 0, ErrSharedRecv
	}
	if c.state != rdma.StateRTS {
		return 0, stateError(c.state, c.err)
	}
	return c.rq.Post(wrs)
}
