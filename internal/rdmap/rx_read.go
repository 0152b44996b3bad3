package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The peer's Read Requests (RFC 5040 §5.2) and Read V2 Requests (V2 draft),
// and the Read V2 Responses to this side's Read V2s.

// acceptRequest checks the MSN and the IRD of a request on QN 1 and the
// data source of a Read (size > 0), and prepares its IRQ entry. rdma is
// the request's RDMA header when a failure attaches it (RFC 5040 Read
// Request), else nil.
func (c *Core) acceptRequest(h *wire.DDPHeader, kind irqKind, msnErr *wire.ProtocolError, rdma []byte, stag uint32, to, size uint64) *TerminateError {
	rx := &c.rx
	term := func(err error) *TerminateError {
		if rdma != nil {
			return c.termRDMA(err, rdma)
		}
		return c.termDDP(err)
	}
	if h.MSN != rx.msn[wire.QNReadReq] {
		return term(msnErr)
	}
	if c.irq.len() >= c.p.IRD {
		return term(ErrIRDExceeded)
	}
	e := irqEntry{kind: kind, size: size}
	if size > 0 { // a zero-length Read (a Read RTR) is never STag-checked
		src, region, g, why := c.cfg.Table.PinRemote(mem.STag(stag), c.cfg.PD, mem.AccessRemoteRead, to, size)
		if why == mem.OK && !c.leaseRemote(region, g) {
			why = mem.InvalidSTag
		}
		if why != mem.OK {
			return term(placementError(why.RDMAPCode(), why))
		}
		e.src, e.region, e.gen, e.leased = src, region, g, true
	}
	rx.msn[wire.QNReadReq]++
	rx.irqNew = e
	rx.after = afterQueueRead
	rx.d.Place(nil)
	return nil
}

// leaseRemote turns the transient pin PinRemote took on region at g into
// a lease; it fails if an invalidation began in between (the request
// then meets an invalid STag).
func (c *Core) leaseRemote(region *mem.Region, g mem.Gen) bool {
	ok := region.Lease(g, c.holder)
	region.Unpin(g)
	return ok
}

// rxReadRequest accepts the peer's Read Request: length, MSN, IRD and the
// data source checked; the response is queued once the FPDU's CRC has
// been verified.
func (c *Core) rxReadRequest(h *wire.DDPHeader, body []byte, rest int) *TerminateError {
	if rest != wire.ReadRequestLen {
		return c.termDDP(ErrReadRequestLength)
	}
	rr, err := wire.ParseReadRequest(body)
	if err != nil {
		return c.termRDMA(err, body)
	}
	te := c.acceptRequest(h, irqRead, errReadReqMSN, body, rr.SrcSTag, rr.SrcTO, uint64(rr.Size))
	if te == nil {
		c.rx.irqNew.sinkSTag, c.rx.irqNew.sinkTO = rr.SinkSTag, rr.SinkTO
	}
	return te
}

// rxReadV2Request accepts a Read V2 Request like a Read Request; errors
// carry the DDP header only (its RDMA header is not the 28-byte one RFC
// 5040's R bit describes).
func (c *Core) rxReadV2Request(h *wire.DDPHeader, body []byte, rest int) *TerminateError {
	if rest != wire.ReadV2RequestLen {
		return c.termDDP(wire.ErrShortRDMAPHeader)
	}
	rr, err := wire.ParseReadV2Request(body)
	if err != nil {
		return c.termDDP(err)
	}
	return c.acceptRequest(h, irqReadV2, errReadV2ReqMSN, nil, rr.SrcSTag, rr.SrcTO, uint64(rr.Size))
}

// rxReadV2Response places a Read V2 Response segment into the scatter list
// of this side's oldest outstanding request, which must be a Read V2:
// MSN of QN 3, MO = bytes placed so far, never beyond the requested size;
// at L=1 exactly the requested size must have arrived.
func (c *Core) rxReadV2Response(h *wire.DDPHeader, payload int) *TerminateError {
	rx := &c.rx
	e := c.oldestORQ()
	if e == nil || e.wr.Op != rdma.OpReadV2 {
		return c.termDDP(ErrUnexpectedReadResponse)
	}
	if h.MSN != rx.msn[wire.QNResponse] {
		return c.termDDP(errReadV2RespMSN)
	}
	if uint64(h.MO) != e.read {
		return c.termDDP(ErrInvalidMO)
	}
	if uint64(payload) > e.size-e.read {
		return c.termDDP(ErrReadV2TooLong)
	}
	if h.Last {
		if e.read+uint64(payload) != e.size {
			return c.termDDP(ErrReadV2Short)
		}
		rx.after = afterReadV2Done
	}
	off := e.read
	e.read += uint64(payload)
	c.placeSGL(e.sgl, e.gens, off, payload, sinkORQ)
	return nil
}
