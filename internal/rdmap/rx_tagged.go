package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Tagged segments (RFC 5041 §5.2): RDMA Writes into this side's memory and
// Read Responses into this side's Read sinks.

// rxWrite places an RDMA Write segment (RFC 5040 §5.1): the STag, PD,
// remote-write access and bounds are checked and the target pinned in one
// step; each later read into it re-pins it.
func (c *Core) rxWrite(h *wire.DDPHeader, payload int) *TerminateError {
	if payload == 0 {
		c.rx.d.Place(nil) // zero-length Writes (a Write RTR) are never STag-checked
		return nil
	}
	dst, region, g, why := c.cfg.Table.PinRemote(mem.STag(h.STag), c.cfg.PD, mem.AccessRemoteWrite, h.TO, uint64(payload))
	if why != mem.OK {
		return c.termDDP(placementError(why.DDPCode(), why))
	}
	c.placeRemote(dst, region, g)
	return nil
}

// oldestORQ returns this side's oldest outstanding Read or atomic, or nil.
func (c *Core) oldestORQ() *sqEntry {
	if c.orq.len() == 0 {
		return nil
	}
	return c.entry(*c.orq.at(0))
}

// rxReadResponse places a Read Response segment. It is accepted only
// against this side's oldest outstanding Read: same sink STag, inside the
// sink range, not longer than requested (otherwise a hostile responder
// could write into any buffer whose STag it guesses).
func (c *Core) rxReadResponse(h *wire.DDPHeader, payload int) *TerminateError {
	rx := &c.rx
	e := c.oldestORQ()
	if e == nil || !read(&e.wr) {
		// Nothing outstanding, or the oldest outstanding request is an
		// atomic or a Read V2: its answer must come first (RFC 7306 §7).
		return c.termDDP(ErrUnexpectedReadResponse)
	}
	if payload > 0 || e.size > 0 {
		if h.STag != e.sinkSTag {
			return c.termDDP(ErrReadResponseSTag)
		}
		if h.TO != e.sinkTO+e.read || uint64(payload) > e.size-e.read {
			return c.termDDP(ErrReadResponseRange)
		}
	}
	if h.Last {
		if e.read+uint64(payload) != e.size {
			return c.termDDP(ErrReadResponseShort)
		}
		rx.after = afterReadDone
	}
	if payload == 0 {
		rx.d.Place(nil)
		return nil
	}
	off := e.read
	e.read += uint64(payload)
	c.placeSGL(e.sgl, e.gens, off, payload, sinkORQ)
	return nil
}

// completeRead completes this side's oldest outstanding request, a Read or
// Read V2 whose response has been placed; a Read with Invalidate then
// invalidates its sink, and completes once that drained.
func (c *Core) completeRead() {
	seq := *c.orq.at(0)
	c.orq.pop()
	e := c.entry(seq)
	e.complete = true
	if e.wr.Op == rdma.OpRead && e.wr.Flags&rdma.Invalidate != 0 && len(e.sgl) == 1 {
		c.waitFor(e, c.beginInvalidate(e.sgl[0].Region, e.sinkSTag))
	}
	c.advanceSQ()
}
