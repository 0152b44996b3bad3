package rdmap

import (
	"errors"
	"fmt"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// Memory window binds by work request (rdma.OpBindWindow, libibverbs'
// IBV_WR_BIND_MW): a type 2 window is bound to the range of a local region
// the WR's single SGE names, with the rights SendWR.Access, when the WR
// reaches the head of the send queue, so a WR posted after it (on this QP)
// runs once the window is bound. Nothing goes on the wire.
//
// At post, only the WR's shape is checked (the SGL is one non-empty SGE
// that resolves like any SGE: the current STag of a region of the QP's
// protection domain, covering the bytes; SendWR.Window names a memory
// window). Everything that depends on the window's or the region's state is
// checked when the WR executes, as libibverbs providers do: a failure
// completes the WR with rdma.StatusLocalProtection and an error wrapping
// ErrBindWindow and the reason (the QP stays in RTS, as for a Local
// Invalidate that fails).

// Errors of memory window binds.
var (
	// ErrBindSGE: a bind WR's SGL is not exactly one SGE of at least one
	// byte (a type 2 window cannot be bound with length 0).
	ErrBindSGE = errors.New("a memory window bind needs exactly one non-empty scatter/gather element")
	// ErrBindNoWindow: a bind WR's Window names no memory window.
	ErrBindNoWindow = errors.New("the STag to bind names no memory window")
	// ErrBindWindow wraps the reason a bind WR failed when it executed.
	ErrBindWindow = errors.New("bind failed")
	// ErrBindSTag: the bind WR's Window is not the window's current STag
	// (it was bound since, or deallocated).
	ErrBindSTag = errors.New("not the current STag of the memory window")
	// ErrBindType: a bind WR named a type 1 window, which is bound by a
	// call only.
	ErrBindType = errors.New("a type 1 memory window is not bound by a work request")
	// ErrBindPD: the window belongs to another protection domain than the
	// QP.
	ErrBindPD = errors.New("the memory window belongs to another protection domain than the QP")
)

// checkBind is the post-time check of a bind WR whose SGL resolved to sgl.
func (c *Core) checkBind(wr *SendWR, sgl []Seg) error {
	if len(sgl) != 1 || sgl[0].Len == 0 {
		return ErrBindSGE
	}
	if c.cfg.Table.LookupWindow(mem.STag(wr.Window)) == nil {
		return ErrBindNoWindow
	}
	return nil
}

// bindWindow runs a bind WR at the head of the send queue. On success the
// window's new STag is valid at once and the completion waits, if the
// window's previous binding is still draining (an invalidation whose
// accesses are in flight), until it drained; on failure the WR completes
// with a local protection error.
func (c *Core) bindWindow(e *sqEntry) {
	e.complete = true
	fail := func(why error) {
		e.status, e.err = rdma.StatusLocalProtection, fmt.Errorf("%w: %w", ErrBindWindow, why)
	}
	t := c.cfg.Table
	w := t.LookupWindow(mem.STag(e.wr.Window))
	switch {
	case w == nil || uint32(w.STag()) != e.wr.Window:
		fail(ErrBindSTag)
		return
	case w.PD() != c.cfg.PD:
		fail(ErrBindPD)
		return
	case w.Type() != mem.WindowType2:
		fail(ErrBindType)
		return
	}
	s := &e.sgl[0]
	stag, old, err := t.BeginBindAt(w, mem.STag(e.wr.Window), s.Region, e.gens[0], s.Region.Base()+s.Off, uint64(s.Len), e.wr.Access)
	if err != nil {
		fail(err)
		return
	}
	// From here on the WR's Window is the window's new STag: what undoBind
	// ends if the completion is not to report the bind.
	e.wr.Window = uint32(stag)
	if old != nil && !old.Drained() {
		c.waitFor(e, old)
	}
}

// undoBind ends the binding a bind WR made, if it is still the window's
// current one, without waiting. It is for a bind WR whose completion waited
// for the window's old binding to drain when the QP failed: that
// completion reports the WR flushed (stopDrains), and a flushed bind must
// not leave the window bound under an STag the application was never
// given (it would not unbind it, and a type 2 window would refuse its next
// bind with ErrWindowBound).
func (c *Core) undoBind(e *sqEntry) {
	t := c.cfg.Table
	stag := mem.STag(e.wr.Window)
	if w := t.LookupWindow(stag); w != nil && w.STag() == stag {
		if v := w.Binding(); v != nil && v.Window() == w {
			t.BeginInvalidate(v, stag)
		}
	}
}
