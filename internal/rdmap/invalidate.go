package rdmap

import (
	"fmt"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// STag invalidation (RFC 5040 §5.3, §6.2): by the peer with a Send with
// Invalidate, by the owner with a Local Invalidate WR (in send-queue
// order), or by an RDMA Read that invalidates its sink once placed. In
// each case the STag fails at once for new arrivals (mem.BeginInvalidate,
// which never blocks), and the work request's completion waits until no
// pin or lease of the old generation remains (defects 1 and 2: the Core
// never waits for a pin, least of all one it would release itself).

// beginInvalidate invalidates stag of region and returns the invalidation
// a completion must wait for (nil if none is pending). If a re-key or
// another invalidation came first, that one wins and is waited for.
func (c *Core) beginInvalidate(region *mem.Region, stag uint32) *mem.Invalidation {
	inv, _ := c.cfg.Table.BeginInvalidate(region, mem.STag(stag))
	if inv == nil || inv.Drained() {
		return nil
	}
	return inv
}

// localInvalidate runs a Local Invalidate WR, which puts nothing on the
// wire: an STag it may not invalidate completes it with a local
// protection error (the QP stays in RTS); otherwise it completes once the
// invalidation drained.
func (c *Core) localInvalidate(e *sqEntry) {
	e.complete = true
	region, why := c.cfg.Table.CheckLocalInvalidate(mem.STag(e.wr.InvalidateSTag), c.cfg.PD)
	if why != mem.InvalidateOK {
		e.status, e.err = rdma.StatusLocalProtection, fmt.Errorf("%w: %v", ErrLocalInvalidate, why)
		return
	}
	c.waitFor(e, c.beginInvalidate(region, e.wr.InvalidateSTag))
}

// waitFor makes e's completion wait for inv (nil: nothing).
func (c *Core) waitFor(e *sqEntry, inv *mem.Invalidation) {
	if inv != nil {
		e.inv = inv
		c.deferOn(inv)
	}
}
