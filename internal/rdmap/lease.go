package rdmap

import "github.com/goiwarp/iwarp/internal/mem"

// Leases of the transmit path: outbound octets the Encoder references
// across waits on the peer (a Read Response, a Send or Write too large to
// copy) keep their region's generation leased until TxDone consumed the
// last FPDU that references them; every access to them (the copy or CRC
// of Append, the write of the iovecs TxBufs hands out) is bracketed by
// PinLeased and Unpin. Leases are kept in FPDU order: a message's leases
// are open (until 0) while it is being appended.

// leaseRec is a lease held for referenced payload: it ends once the FPDU
// numbered until has been consumed (0: its message is still being
// appended).
type leaseRec struct {
	r     *mem.Region
	g     mem.Gen
	until uint64
}

// unpinOut ends the transient pins of the first n leases.
func (c *Core) unpinOut(n int) {
	for i := 0; i < n; i++ {
		l := c.tx.leases.at(i)
		l.r.Unpin(l.g)
	}
}

// endLeases ends the leases whose octets have all been consumed.
func (c *Core) endLeases() {
	t := &c.tx
	for t.leases.len() > 0 {
		l := t.leases.front()
		if l.until == 0 || l.until > t.consumed {
			return
		}
		l.r.EndLease(l.g, c.holder)
		t.leases.pop()
	}
}

// sealLeases makes the leases of the message just appended end once its
// last FPDU (the latest appended) is consumed.
func (c *Core) sealLeases() {
	t := &c.tx
	for i := t.leases.len() - 1; i >= 0; i-- {
		l := t.leases.at(i)
		if l.until != 0 {
			return
		}
		l.until = t.appended
	}
}

// dropOpenLeases ends at once the leases of the current message (none of
// its octets reference them any more, or none ever did).
func (c *Core) dropOpenLeases() {
	t := &c.tx
	for t.leases.len() > 0 {
		l := t.leases.back()
		if l.until != 0 {
			return
		}
		l.r.EndLease(l.g, c.holder)
		t.leases.popBack()
	}
}
