package engine

import (
	"context"
	"fmt"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// STag invalidation (RFC 5040 §5.3, §6.2): by the peer with a Send with
// Invalidate, by the owner with a local-invalidate work request (in send
// queue order), or by an RDMA Read that invalidates its sink once placed.
// In each case the STag fails at once for new arrivals, and the
// invalidation waits until no placement into the region is in flight.

// ErrLocalInvalidate: a local-invalidate work request named an STag that
// is unknown, already invalid, or of another protection domain.
var ErrLocalInvalidate = fmt.Errorf("STag cannot be invalidated")

// checkSendInvalidate validates the Invalidate STag of a Send with
// Invalidate's last segment; the invalidation itself happens once the
// message is placed and its CRC checked.
func (qp *QP) checkSendInvalidate(h *wire.DDPHeader, n int) error {
	region, why := qp.cfg.Table.CheckRemoteInvalidate(mem.STag(h.InvSTag), qp.cfg.PD)
	if why != mem.InvalidateOK {
		return qp.termDDP(wire.NewProtocolError(why.String(), why.TermCode()), h, n)
	}
	qp.rx.invRegion, qp.rx.invSTag = region, h.InvSTag
	return nil
}

// doSendInvalidate invalidates the STag a completed Send with Invalidate
// named and records it in the completion.
func (qp *QP) doSendInvalidate(c *CQE) {
	rx := &qp.rx
	if rx.invRegion == nil {
		return
	}
	_ = qp.cfg.Table.InvalidateSTag(context.Background(), rx.invRegion, mem.STag(rx.invSTag))
	c.Flags |= Invalidated
	c.InvSTag = rx.invSTag
	rx.invRegion = nil
}

// localInvalidate runs a local-invalidate work request.
func (qp *QP) localInvalidate(e *sqEntry) {
	region, why := qp.cfg.Table.CheckLocalInvalidate(mem.STag(e.wr.InvSTag), qp.cfg.PD)
	if why != mem.InvalidateOK {
		e.status, e.err = StatusLocalProtection, fmt.Errorf("%w: %v", ErrLocalInvalidate, why)
		return
	}
	_ = qp.cfg.Table.InvalidateSTag(context.Background(), region, mem.STag(e.wr.InvSTag))
}

// readInvalidate invalidates the sink of a completed Read with invalidate.
func (qp *QP) readInvalidate(e *sqEntry) {
	if len(e.wr.SGL) != 1 {
		return
	}
	r := e.wr.SGL[0].Region
	_ = qp.cfg.Table.InvalidateSTag(context.Background(), r, r.STag())
}
