package iwarp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp"
)

// Review 7: the memory window API's edges.

// TestReview7BindMWLengthPastUint32: QP.BindMW's n is an int, the SGE's
// length a uint32. A length of 2^32+8 on a 64-byte region must fail like
// any range outside the region (ErrInvalidWR), not bind the 8 bytes the
// truncated length names and report success.
func TestReview7BindMWLengthPastUint32(t *testing.T) {
	_, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	parent := mwParent(t, b, 64, mwParentAccess)
	mw, err := b.pd.AllocMW(iwarp.WindowType2)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct{ off, n int }{{0, 1<<32 + 8}, {8, 1<<32 + 8}, {0, 65}, {64, 1}, {-1, 8}, {0, -1}} {
		rb, err := b.qp.BindMW(ctx, mw, parent, x.off, x.n, iwarp.AccessRemoteRead)
		if !errors.Is(err, iwarp.ErrInvalidWR) || mw.Bound() {
			t.Fatalf("BindMW(off %d, n %d) on 64 bytes: %+v %v (bound %v)", x.off, x.n, rb, err, mw.Bound())
		}
	}
}

// TestReview7BindMWDoneContext: QP.BindMW with a context that has already
// ended fails with its error and binds nothing: the caller, told the bind
// failed, must not be left with a window bound (exposing its parent's
// bytes under an STag it was never given) that then refuses the next bind
// with ErrMWBound.
func TestReview7BindMWDoneContext(t *testing.T) {
	_, b := connectPair(t, nil, nil)
	parent := mwParent(t, b, 64, mwParentAccess)
	mw, err := b.pd.AllocMW(iwarp.WindowType2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.qp.BindMW(ctx, mw, parent, 0, 8, iwarp.AccessRemoteWrite); !errors.Is(err, context.Canceled) {
		t.Fatalf("BindMW with an ended context: %v", err)
	}
	if mw.Bound() {
		t.Fatal("BindMW failed with the context's error but bound the window")
	}
	rb, err := b.qp.BindMW(ctx10(t), mw, parent, 0, 8, iwarp.AccessRemoteWrite)
	if err != nil || rb.Len != 8 {
		t.Fatalf("BindMW after: %+v %v", rb, err)
	}
}

// TestReview7DeallocatedWindowCalls: once Dealloc returned, every call on
// the window fails with ErrMWDeallocated (docs/memory-windows.md: "later
// calls return ErrMWDeallocated"), Unbind and QP.BindMW included.
func TestReview7DeallocatedWindowCalls(t *testing.T) {
	_, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	parent := mwParent(t, b, 64, mwParentAccess)
	w1, _ := b.pd.AllocMW(iwarp.WindowType1)
	w2, _ := b.pd.AllocMW(iwarp.WindowType2)
	if _, err := w1.Bind(ctx, parent, 0, 8, iwarp.AccessRemoteWrite); err != nil {
		t.Fatal(err)
	}
	for _, mw := range []*iwarp.MW{w1, w2} {
		if err := mw.Dealloc(ctx); err != nil {
			t.Fatal(err)
		}
		if err := mw.Unbind(ctx); !errors.Is(err, iwarp.ErrMWDeallocated) {
			t.Errorf("type %v: Unbind after Dealloc: %v", mw.Type(), err)
		}
	}
	if _, err := b.qp.BindMW(ctx, w2, parent, 0, 8, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrMWDeallocated) {
		t.Errorf("BindMW after Dealloc: %v", err)
	}
}

// TestReview7WindowOfAnotherDevice: a window and a region are named by
// STags, which mean something in their own Device's table only. QP.BindMW
// of another Device's window must not look its STag up in the QP's
// Device (where it names nothing or, by chance, another window), and
// MW.Bind to another Device's region is a region of another PD.
func TestReview7WindowOfAnotherDevice(t *testing.T) {
	_, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	other := newEndpoint(t)
	parent := mwParent(t, b, 64, mwParentAccess)
	otherParent := mwParent(t, other, 64, mwParentAccess)
	otherMW, err := other.pd.AllocMW(iwarp.WindowType2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.qp.BindMW(ctx, otherMW, parent, 0, 8, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrMWPD) || otherMW.Bound() {
		t.Errorf("BindMW of another Device's window: %v", err)
	}
	mw, _ := b.pd.AllocMW(iwarp.WindowType2)
	if _, err := b.qp.BindMW(ctx, mw, otherParent, 0, 8, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrInvalidWR) || mw.Bound() {
		t.Errorf("BindMW to another Device's region: %v", err)
	}
	w1, _ := b.pd.AllocMW(iwarp.WindowType1)
	if _, err := w1.Bind(ctx, otherParent, 0, 8, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrMWPD) || w1.Bound() {
		t.Errorf("Bind to another Device's region: %v", err)
	}
}
