package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The responder side: the peer's Read, Read V2 and Atomic Requests wait in
// the IRQ (at most IRD) in arrival order and are answered in that order.
// A request's source or target is checked when it arrives (the Terminate
// codes of docs/wire.md) and leased at once: the peer is owed the
// response, so an invalidation that comes later (a Send with Invalidate in
// the same burst, a local Deregister) waits for it rather than failing it,
// and a deregistration whose context ends revokes the lease. The bytes are
// read (or the atomic run) when the response is generated, under
// PinLeased.
//
// Read then Atomic (RFC 7306 §7, defect 13): "Atomic Response Message will
// not be generated until RDMA Read Response has been generated". An
// atomic runs only when every response before it in the IRQ has been
// generated: its last octet copied into the Encoder, or, when the source
// was referenced, consumed by TxDone (after which the source may change
// without changing what was sent). An atomic with nothing before it runs
// as soon as its FPDU ended, so it still precedes every later message's
// placement (docs/extensions.md §2).

type irqKind uint8

const (
	irqRead   irqKind = iota // RFC 5040 Read: a tagged Read Response
	irqReadV2                // V2 Read: an untagged Read V2 Response on QN 3
	irqAtomic                // RFC 7306 atomic: an Atomic Response on QN 3
)

// irqEntry is one request of the peer, waiting for its response.
type irqEntry struct {
	kind     irqKind
	sinkSTag uint32
	sinkTO   uint64
	size     uint64
	// The source of a Read (size > 0): its bytes and registration.
	src    []byte
	region *mem.Region
	gen    mem.Gen

	// leased: the entry holds a lease of region at gen (until its
	// response starts, when the transmit path takes the lease over, or
	// its atomic ran).
	leased bool

	// An atomic: the request, and once done the value found.
	req  wire.AtomicRequest
	done bool
	orig uint64
}

// endLease ends the lease the entry holds, if any.
func (r *irqEntry) endLease(h mem.Holder) {
	if r.leased {
		r.region.EndLease(r.gen, h)
		r.leased = false
	}
}

// respCopy reports whether a response's payload is copied into the
// Encoder (CRC on: the CRC must match the bytes sent whatever the source
// does; or small) rather than referenced.
func (c *Core) respCopy(r *irqEntry) bool { return c.cfg.Framing.CRC || r.size <= copyMax }

// startResponse makes r, the IRQ's oldest request (a Read or Read V2),
// the message being sent; its source's lease moves to the transmit path.
func (c *Core) startResponse(r *irqEntry) {
	t := &c.tx
	if r.leased {
		t.leases.push(leaseRec{r: r.region, g: r.gen})
		r.leased = false
	}
	t.cur = txMsg{kind: txResp, r: r, size: r.size}
}

// respDone: the current response's last FPDU was appended. It leaves the
// IRQ with its IRD credit (the peer cannot receive the response, and send
// another request, earlier); a copied response is generated now, a
// referenced one once its octets are consumed.
func (c *Core) respDone() {
	t := &c.tx
	r := t.cur.r
	t.cur = txMsg{}
	if r.size > 0 {
		if c.respCopy(r) {
			c.dropOpenLeases()
		} else {
			c.sealLeases()
			t.refPending++
			t.events.push(txEvent{at: t.appended, kind: evRespRef})
		}
	}
	c.irq.pop()
	c.runAtomics()
}

// runAtomics runs the atomics whose turn has come: those with only atomics
// before them in the IRQ and no referenced response still unconsumed.
func (c *Core) runAtomics() {
	if c.state != rdma.StateRTS && c.state != rdma.StateClosing {
		return
	}
	for i := 0; i < c.irq.len(); i++ {
		r := c.irq.at(i)
		if r.kind != irqAtomic || c.tx.refPending > 0 {
			return
		}
		if r.done {
			continue
		}
		if !r.region.PinLeased(r.gen, c.holder) {
			c.Fail(ErrLeaseRevoked)
			return
		}
		a := &r.req
		if a.AOpCode == wire.AOpCmpSwap {
			r.orig = r.region.AtomicCmpSwap(a.TO, a.CompareData, a.CompareMask, a.AddSwapData, a.AddSwapMask)
		} else {
			r.orig = r.region.AtomicFetchAdd(a.TO, a.AddSwapData, a.AddSwapMask)
		}
		r.region.Unpin(r.gen)
		r.endLease(c.holder)
		r.done = true
		c.atomicRan()
	}
}

// atomicRan counts an executed (or dropped) atomic and releases the
// receive completions that waited for it.
func (c *Core) atomicRan() {
	c.atomicsRun++
	if c.rcq.len() > 0 {
		c.advanceRecv()
	}
}

// appendAtomicResponse appends the Atomic Response of r (QN 3).
func (c *Core) appendAtomicResponse(r *irqEntry) {
	t := &c.tx
	b := c.lastHdr(wire.OpAtomicResponse, wire.QNResponse, t.msn[wire.QNResponse], 0, 0)
	t.msn[wire.QNResponse]++
	c.emit(wire.AppendAtomicResponse(b, &wire.AtomicResponse{RequestID: r.req.RequestID, OriginalValue: r.orig}), true)
}
