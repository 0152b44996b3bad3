package iwarp

import (
	"context"
	"errors"
	"math"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// WindowType is a memory window's type (libibverbs' enum ibv_mw_type):
// WindowType1 or WindowType2. See docs/memory-windows.md.
type WindowType = rdma.WindowType

// The memory window types.
const (
	// WindowType1 is bound and unbound by calls (MW.Bind, MW.Unbind; as
	// ibv_bind_mw) and cannot be invalidated, locally or by the peer.
	WindowType1 = rdma.WindowType1
	// WindowType2 is bound by a send work request (OpBindWindow, or
	// QP.BindMW), in send-queue order, and unbound by a Local Invalidate
	// or, if bound with AccessRemoteInvalidate, by the peer's Send with
	// Invalidate. It must be unbound before it is bound again.
	WindowType2 = rdma.WindowType2
)

// MW is a memory window (RFC 5040 §2, "Memory Window"; libibverbs'
// struct ibv_mw): an STag of its own in a protection domain that, once
// bound, exposes a range of a registered region (its parent, registered
// with AccessMWBind) to the peer with rights of its own. The peer
// addresses the window's bytes with the window's STag and the TOs it would
// use for the region (MW.Remote). Every bind gives the window a new STag
// (a new key over the same index): the STags of earlier bindings fail at
// once. Accesses through a window are remote only: a window's STag is not
// a local SGE. Deregistering, invalidating or re-keying the parent unbinds
// its windows. An MW is safe for concurrent use.
type MW struct {
	pd *PD
	w  *mem.Window
}

// AllocMW allocates a memory window of type typ in the PD (ibv_alloc_mw).
// It is not bound: every access through its STag fails (the peer gets an
// invalid-STag Terminate) until a bind. A type other than WindowType1 and
// WindowType2 fails with ErrMWType.
func (pd *PD) AllocMW(typ WindowType) (*MW, error) {
	w, err := pd.dev.table.AllocWindow(pd.id, typ)
	if err != nil {
		return nil, mwError(err)
	}
	return &MW{pd: pd, w: w}, nil
}

// STag returns the window's current STag: the one its last bind gave it
// (valid while it is bound), or the one it was allocated with. A bind WR
// names the window by it (SendWR.Window), and so do a Local Invalidate and
// the peer's Send with Invalidate.
func (mw *MW) STag() uint32 { return uint32(mw.w.STag()) }

// Type returns the window's type.
func (mw *MW) Type() WindowType { return mw.w.Type() }

// PD returns the window's protection domain.
func (mw *MW) PD() *PD { return mw.pd }

// Bound reports whether the window is bound now: its current binding was
// not unbound, invalidated, or ended by its parent's deregistration,
// invalidation or re-key.
func (mw *MW) Bound() bool { return mw.w.Bound() }

// Remote returns the window's current binding as a peer addresses it: the
// binding's STag, the TO of the range's first byte in the parent's TO
// space, and the range's length (the three of one binding, even while a
// bind runs). An unbound window's has the window's STag and Len 0 (and the
// STag fails at the peer's first access).
func (mw *MW) Remote() RemoteBuffer {
	v := mw.w.Binding()
	if v == nil || !v.Valid() {
		return RemoteBuffer{STag: mw.STag()}
	}
	return RemoteBuffer{STag: uint32(v.STag()), TO: v.Base(), Len: uint32(v.Len())}
}

// Bind binds a type 1 window to n bytes of mr at offset off with the rights
// access (ibv_bind_mw), and returns the binding as the peer addresses it.
// access may hold AccessRemoteRead, AccessRemoteWrite and
// AccessRemoteAtomic; the window's rights need not be among mr's remote
// rights, but mr must have been registered with AccessMWBind, remote write
// or atomic rights need AccessLocalWrite on mr (as in libibverbs), and
// atomic rights an 8-byte aligned range.
//
// A bound window is unbound first: its old STag fails at once for new
// arrivals, and Bind waits, bounded by ctx like MR.Rekey, until no access
// through the old binding is in flight; if ctx ends first, the new
// binding is valid and the error says what was revoked. n == 0 unbinds the
// window (libibverbs' zero-length bind) and returns a RemoteBuffer of
// length 0.
//
// Errors: ErrMWType (a type 2 window: bind it with OpBindWindow), ErrRange
// (off and n outside mr), ErrMWAccess, ErrMWPD (mr in another PD),
// ErrMWRegion (mr deregistered or invalid), ErrMWDeallocated.
func (mw *MW) Bind(ctx context.Context, mr *MR, off, n int, access Access) (RemoteBuffer, error) {
	if mw.w.Type() != WindowType1 {
		return RemoteBuffer{}, wrapAs(ErrMWType, errBindByCall)
	}
	if mr == nil {
		return RemoteBuffer{}, wrapAs(ErrMWRegion, mem.ErrWindowParent)
	}
	if mr.pd != mw.pd {
		return RemoteBuffer{}, wrapAs(ErrMWPD, mem.ErrWindowPD)
	}
	if off < 0 || n < 0 || off > mr.Len() || mr.Len()-off < n {
		return RemoteBuffer{}, ErrRange
	}
	s, err := mw.pd.dev.table.BindContext(ctx, mw.w, mr.r, mr.TO()+uint64(off), uint64(n), access)
	rb := RemoteBuffer{STag: uint32(s), TO: mr.TO() + uint64(off), Len: uint32(n)}
	if n == 0 {
		rb.TO = 0
	}
	if err != nil {
		var rev *mem.RevokedError
		if errors.As(err, &rev) {
			return rb, wrapAs(nil, err)
		}
		return RemoteBuffer{}, mwError(err)
	}
	return rb, nil
}

// errBindRange is the cause of ErrInvalidWR for QP.BindMW of a range that
// does not lie within the region.
var errBindRange = errors.New("the range to bind does not lie within the region")

// errBindByCall is the cause of ErrMWType for MW.Bind on a type 2 window.
var errBindByCall = errors.New("a type 2 memory window is bound by a work request (OpBindWindow), not by a call")

// Unbind unbinds the window, whatever its type (for type 2 it is a local
// invalidation outside any send queue's order): its STag fails at once for
// new arrivals, and Unbind waits, bounded by ctx, until no access through
// the binding is in flight. When it returns nil no byte can land in the
// parent through the window any more. Unbinding an unbound window returns
// at once (once its last unbind drained); a deallocated window's Unbind
// fails with ErrMWDeallocated, once the deallocation's drain is over.
func (mw *MW) Unbind(ctx context.Context) error {
	err := mw.pd.dev.table.Unbind(ctx, mw.w)
	if errors.Is(err, mem.ErrDeallocated) {
		return wrapAs(ErrMWDeallocated, err)
	}
	return wrapAs(nil, err)
}

// Dealloc unbinds the window and frees its STag (ibv_dealloc_mw), waiting
// like Unbind, bounded by ctx. Once it has returned nil, later calls fail
// with ErrMWDeallocated.
func (mw *MW) Dealloc(ctx context.Context) error {
	err := mw.pd.dev.table.DeallocWindow(ctx, mw.w)
	if errors.Is(err, mem.ErrDeallocated) {
		return wrapAs(ErrMWDeallocated, err)
	}
	return wrapAs(nil, err)
}

// Close deallocates the window, waiting as long as an access through it is
// in flight (see Dealloc).
func (mw *MW) Close() error { return mw.Dealloc(context.Background()) }

// BindMW binds the type 2 window mw to n bytes of mr at offset off with
// the rights access by posting an OpBindWindow work request and waiting
// for its completion (as Do does): the bind happens in send-queue order,
// after the WRs posted before it. It returns the binding as the peer
// addresses it. A WR that cannot be posted fails with ErrInvalidWR (off
// and n outside mr, mr not the current STag of a region of the QP's PD);
// a bind that fails when it executes returns a *WRError with
// StatusLocalProtection whose error matches ErrMWType, ErrMWBound,
// ErrMWAccess, ErrMWPD, ErrMWRegion or ErrMWSTag. A deallocated window
// fails with ErrMWDeallocated. With ctx ended already, BindMW posts
// nothing and returns ctx's error; if ctx ends while it waits, the WR
// stays posted and may still bind the window (as for Do): MW.Bound and
// MW.Remote tell.
func (qp *QP) BindMW(ctx context.Context, mw *MW, mr *MR, off, n int, access Access) (RemoteBuffer, error) {
	switch {
	case mw == nil:
		return RemoteBuffer{}, wrapAs(ErrInvalidWR, rdmap.ErrBindNoWindow)
	case mr == nil:
		return RemoteBuffer{}, wrapAs(ErrInvalidWR, rdmap.ErrBindSGE)
	case mw.pd.dev != qp.pd.dev:
		// The WR names the window by its STag in the QP's Device's table,
		// where another Device's STag names nothing or another window.
		return RemoteBuffer{}, wrapAs(ErrMWPD, rdmap.ErrBindPD)
	case mr.pd.dev != qp.pd.dev:
		// Likewise the SGE names the region by its STag.
		return RemoteBuffer{}, wrapAs(ErrInvalidWR, rdmap.ErrPD)
	case mw.w.Deallocated():
		return RemoteBuffer{}, wrapAs(ErrMWDeallocated, mem.ErrDeallocated)
	case off < 0 || n < 0 || off > mr.Len() || mr.Len()-off < n || uint64(n) > math.MaxUint32:
		// The SGE's length is a uint32: check n before it is truncated.
		return RemoteBuffer{}, wrapAs(ErrInvalidWR, errBindRange)
	}
	// A bind posted is a bind done, whatever the wait: with ctx ended
	// already, post nothing.
	if err := ctx.Err(); err != nil {
		return RemoteBuffer{}, err
	}
	wr := SendWR{Op: OpBindWindow, Window: mw.STag(), Access: access, SGL: []SGE{mr.SGE(off, n)}}
	if err := qp.do(ctx, wr); err != nil {
		return RemoteBuffer{}, err
	}
	return mw.Remote(), nil
}

// mwError converts an error of the memory table's window calls, or of a
// bind work request, into the API's: wrapped as the window sentinel it
// matches (ErrRange for bounds), or as it is.
func mwError(err error) error {
	if k := windowKind(err); k != nil {
		return wrapAs(k, err)
	}
	return wrapAs(nil, err)
}

// windowKind returns the window sentinel that err (an error of the memory
// table's window calls or of a bind work request) matches, or nil.
func windowKind(err error) error {
	for _, m := range []struct {
		kind  error
		cause []error
	}{
		{ErrMWType, []error{mem.ErrWindowType, mem.ErrWindowType1, rdmap.ErrBindType}},
		{ErrMWBound, []error{mem.ErrWindowBound}},
		{ErrMWAccess, []error{mem.ErrWindowAccess, mem.ErrWindowLocalWrite, mem.ErrNoMWBind, mem.ErrAtomicAligned}},
		{ErrMWPD, []error{mem.ErrWindowPD, rdmap.ErrBindPD}},
		{ErrMWRegion, []error{mem.ErrWindowParent, mem.ErrParentInvalid, mem.ErrDeregistered}},
		{ErrMWDeallocated, []error{mem.ErrDeallocated}},
		{ErrMWSTag, []error{rdmap.ErrBindSTag, mem.ErrWindowStale}},
		{ErrRange, []error{mem.ErrWindowBounds, mem.ErrWindowEmpty}},
	} {
		for _, c := range m.cause {
			if errors.Is(err, c) {
				return m.kind
			}
		}
	}
	return nil
}
