package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// Completions. Send completions are reported in posting order (advanceSQ),
// receive completions in the order their messages completed; a
// completion that waits for an invalidation to drain (Send with
// Invalidate, Local Invalidate, Read with Invalidate) holds back the later
// completions of its queue. Ready completions wait in out for Poll.

// pendingRecv is a receive completion waiting for inv to drain.
type pendingRecv struct {
	comp Completion
	inv  *mem.Invalidation
	// atomics is Core.atomicsIn when the message completed: the
	// completion waits until that many atomics ran.
	atomics uint64
}

// deferOn records that a completion waits for inv and asks to be woken
// when it drains.
func (c *Core) deferOn(inv *mem.Invalidation) {
	c.deferred++
	if c.cfg.Wake != nil {
		inv.OnDrained(c.cfg.Wake)
	}
}

// drained reports whether the invalidation *inv (nil: none) has drained,
// and forgets it if so.
func (c *Core) drained(inv **mem.Invalidation) bool {
	if *inv == nil {
		return true
	}
	if !(*inv).Drained() {
		return false
	}
	*inv = nil
	c.deferred--
	return true
}

// pushRecv reports a receive completion, after inv (if not nil) drained
// and after every atomic accepted before it ran.
func (c *Core) pushRecv(comp Completion, inv *mem.Invalidation) {
	c.progress++
	comp.QPNum = c.cfg.QPNum
	if inv != nil && inv.Drained() {
		inv = nil
	}
	if inv == nil && c.rcq.len() == 0 && c.atomicsRun == c.atomicsIn {
		c.out = append(c.out, comp)
		return
	}
	if inv != nil {
		c.deferOn(inv)
	}
	c.rcq.push(pendingRecv{comp: comp, inv: inv, atomics: c.atomicsIn})
}

// advanceRecv moves the receive completions whose invalidation drained
// to out, in order.
func (c *Core) advanceRecv() {
	for c.rcq.len() > 0 {
		p := c.rcq.front()
		if p.atomics > c.atomicsRun || !c.drained(&p.inv) {
			return
		}
		c.out = append(c.out, p.comp)
		c.rcq.pop()
	}
}

// stopDrains ends the waits of a QP in ERROR for invalidations that have
// not drained: once its own buffers are released nothing of this QP can
// hold them up, so what is left waits for another QP's lease (a Read
// Response to a peer that does not read). A closed QP must not wait for
// another QP's peer, so those WRs complete as flushed; the invalidation
// itself goes on in internal/mem, and none of their buffers is touched.
func (c *Core) stopDrains() {
	for seq := c.sqDone; seq < c.sqTail; seq++ {
		if e := c.entry(seq); e.inv != nil {
			if e.wr.Op == rdma.OpBindWindow {
				// Reported flushed: the binding it made must not stay.
				c.undoBind(e)
			}
			e.inv = nil
			c.deferred--
			e.complete, e.status, e.err = true, rdma.StatusFlushed, c.err
		}
	}
	for i := 0; i < c.rcq.len(); i++ {
		if p := c.rcq.at(i); p.inv != nil {
			p.inv = nil
			c.deferred--
			p.comp = Completion{Queue: RecvQueue, Slot: p.comp.Slot, Completion: rdma.Completion{ID: p.comp.ID, QPNum: c.cfg.QPNum, Op: rdma.OpRecv, Status: rdma.StatusFlushed, Err: c.err}}
		}
	}
	c.advanceSQ()
	c.advanceRecv()
}

// Poll appends the completions that are ready to dst, in order per queue,
// and returns it. Each accepted work request completes exactly once.
// After Close or Fail, the completions of the flush are returned only once
// no buffer handed out by RxBuf or TxBufs is still in use (RxDone and
// TxDone were called): until then octets may still move between the
// network and a flushed WR's memory.
func (c *Core) Poll(dst []Completion) []Completion {
	if c.deferred > 0 {
		c.advanceSQ()
		c.advanceRecv()
	}
	if c.state == rdma.StateError && (c.tx.out || c.rx.out) {
		return dst
	}
	if c.state == rdma.StateError && c.deferred > 0 {
		c.stopDrains()
	}
	dst = append(dst, c.out...)
	clear(c.out)
	c.out = c.out[:0]
	return dst
}
