package rdmap

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// RFC 7306 atomics. The requester sends an Atomic Request on QN 1, sharing
// its MSN sequence and the ORD credits with Read Requests, and completes
// the WR when the Atomic Response (QN 3, its own MSN sequence) carrying the
// same request identifier arrives. The responder validates the target,
// queues the request behind earlier Read Responses (sharing IRD with
// them) and performs it when its turn comes (irq.go), with sync/atomic in
// internal/mem: atomic with respect to every QP of the Device and to the
// local accessors.

// rxAtomicRequest accepts an Atomic Request: length, operation code, MSN
// (shared with Read Requests), IRD and the target (STag, PD, access,
// bounds, then alignment) are checked now. Errors carry the DDP header and
// no RDMA header (RFC 7306 §8.1).
func (c *Core) rxAtomicRequest(h *wire.DDPHeader, body []byte, rest int) *TerminateError {
	rx := &c.rx
	if rest != wire.AtomicRequestLen {
		return c.termDDP(wire.ErrShortRDMAPHeader)
	}
	ar, err := wire.ParseAtomicRequest(body)
	if err != nil {
		return c.termDDP(err) // unknown AOpCode: RDMAP/2/0x06
	}
	if h.MSN != rx.msn[wire.QNReadReq] {
		return c.termDDP(errAtomicReqMSN)
	}
	if c.irq.len() >= c.p.IRD {
		return c.termDDP(ErrIRDExceeded)
	}
	_, region, g, why := c.cfg.Table.PinRemote(mem.STag(ar.STag), c.cfg.PD, mem.AccessRemoteAtomic, ar.TO, 8)
	if why == mem.OK && ar.TO%8 != 0 {
		region.Unpin(g)
		why = mem.Misaligned
	}
	if why == mem.OK && !c.leaseRemote(region, g) {
		why = mem.InvalidSTag
	}
	if why != mem.OK {
		return c.termDDP(placementError(why.RDMAPCode(), why))
	}
	rx.msn[wire.QNReadReq]++
	rx.irqNew = irqEntry{kind: irqAtomic, req: ar, region: region, gen: g, leased: true}
	rx.after = afterAtomic
	rx.d.Place(nil)
	return nil
}

// rxAtomicResponse matches an Atomic Response to this side's oldest
// outstanding request, which must be an atomic with the same identifier.
func (c *Core) rxAtomicResponse(h *wire.DDPHeader, body []byte, rest int) *TerminateError {
	rx := &c.rx
	if rest != wire.AtomicResponseLen {
		return c.termDDP(wire.ErrShortRDMAPHeader)
	}
	resp, err := wire.ParseAtomicResponse(body)
	if err != nil {
		return c.termDDP(err)
	}
	if h.MSN != rx.msn[wire.QNResponse] {
		return c.termDDP(errAtomicRespMSN)
	}
	e := c.oldestORQ()
	if e == nil || !atomic(&e.wr) {
		return c.termDDP(ErrUnexpectedAtomicResponse)
	}
	if resp.RequestID != uint32(e.seq) {
		return c.termDDP(ErrAtomicResponseID)
	}
	rx.msn[wire.QNResponse]++
	rx.atomicOrig = resp.OriginalValue
	rx.after = afterAtomicDone
	rx.d.Place(nil)
	return nil
}

// completeAtomic completes the oldest outstanding request, an atomic,
// storing the original value in the completion and, under a transient
// pin, in its result SGE (host byte order).
func (c *Core) completeAtomic() {
	e := c.oldestORQ()
	e.original = c.rx.atomicOrig
	if len(e.sgl) == 1 {
		s := &e.sgl[0]
		if !s.Region.Pin(e.gens[0]) {
			c.failWR(e)
			return
		}
		binary.NativeEndian.PutUint64(s.bytes(), e.original)
		s.Region.Unpin(e.gens[0])
	}
	c.orq.pop()
	e.complete = true
	c.advanceSQ()
}
