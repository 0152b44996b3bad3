package mem

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/goiwarp/iwarp/rdma"
)

// parentAccess is what a region needs for every kind of window.
const parentAccess = AccessLocalWrite | AccessMWBind

func newWindow(t *testing.T, tab *Table, pd uint32, typ WindowType) *Window {
	t.Helper()
	w, err := tab.AllocWindow(pd, typ)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func bind(t *testing.T, tab *Table, w *Window, p *Region, base, n uint64, a Access) STag {
	t.Helper()
	s, inv, err := tab.BeginBind(w, p, base, n, a)
	if err != nil {
		t.Fatalf("bind [%#x,+%d) %v: %v", base, n, a, err)
	}
	if inv == nil {
		t.Fatal("bind returned no Invalidation")
	}
	return s
}

// pinReason is PinRemote's Reason, with the pin released.
func pinReason(tab *Table, s STag, pd uint32, need Access, to, n uint64) Reason {
	_, r, g, why := tab.PinRemote(s, pd, need, to, n)
	if why == OK {
		r.Unpin(g)
	}
	return why
}

// TestWindowBindUnbindRebind: a fresh window is unbound; a bind gives a new
// STag whose bytes are the parent's at the same TOs; a rebind moves the
// window and kills the old STag; an unbind kills the current one.
func TestWindowBindUnbindRebind(t *testing.T) {
	tab := NewTable(TableOptions{})
	p, buf := newRegion(t, tab, 1, 4096, parentAccess, 0x10000)
	w := newWindow(t, tab, 1, WindowType1)
	s0 := w.STag()
	if s0.Index() == p.STag().Index() || s0.Index() == 0 {
		t.Fatalf("window STag %v shares an index", s0)
	}
	if tab.Windows() != 1 || tab.Len() != 1 {
		t.Fatalf("Windows %d Len %d", tab.Windows(), tab.Len())
	}
	if w.Bound() || w.Binding() != nil || tab.Lookup(s0) != nil {
		t.Fatal("fresh window bound")
	}
	if why := pinReason(tab, s0, 1, AccessRemoteRead, 0x10000, 1); why != InvalidSTag {
		t.Fatalf("fresh window: %v", why)
	}
	if _, why := tab.Check(s0, 1, 0, 0x10000, 0); why != InvalidSTag {
		t.Fatalf("fresh window Check: %v", why)
	}

	s1 := bind(t, tab, w, p, 0x10100, 256, AccessRemoteWrite|AccessRemoteRead)
	if s1.Index() != s0.Index() || s1 == s0 || w.STag() != s1 || !w.Bound() {
		t.Fatalf("bind: %v from %v (window %v, bound %v)", s1, s0, w.STag(), w.Bound())
	}
	b, v, g, why := tab.PinRemote(s1, 1, AccessRemoteWrite, 0x10110, 4)
	if why != OK || len(b) != 4 || cap(b) != 4 {
		t.Fatalf("PinRemote through the window: %v", why)
	}
	if v.Window() != w || v.Parent() != p || v == p || v.Base() != 0x10100 || v.Len() != 256 || v.PD() != 1 || v.STag() != s1 {
		t.Fatal("binding's accessors")
	}
	copy(b, "wxyz")
	v.Unpin(g)
	if string(buf[0x110:0x114]) != "wxyz" {
		t.Fatalf("bytes not the parent's at the same TO: %q", buf[0x10c:0x118])
	}
	if tab.Lookup(s1) != v || tab.Lookup(s0) != v {
		t.Fatal("Lookup of a window's index")
	}

	// Rebind to another range: the old STag fails at once.
	s2, inv, err := tab.BeginBind(w, p, 0x10800, 16, AccessRemoteRead)
	if err != nil || !inv.Drained() {
		t.Fatalf("rebind: %v drained %v", err, inv != nil && inv.Drained())
	}
	if s2 == s1 || s2.Index() != s1.Index() {
		t.Fatalf("rebind STag %v from %v", s2, s1)
	}
	if why := pinReason(tab, s1, 1, AccessRemoteRead, 0x10100, 1); why != InvalidSTag {
		t.Fatalf("old STag after rebind: %v", why)
	}
	if v.Valid() {
		t.Fatal("old binding still valid")
	}
	if why := pinReason(tab, s2, 1, AccessRemoteRead, 0x10800, 16); why != OK {
		t.Fatalf("new STag: %v", why)
	}
	if why := pinReason(tab, s2, 1, AccessRemoteRead, 0x10100, 1); why != OutOfBounds {
		t.Fatalf("old range through the new STag: %v", why)
	}

	// Unbind, then unbind again; a zero-length bind of type 1 unbinds too.
	if err := tab.Unbind(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if w.Bound() || pinReason(tab, s2, 1, AccessRemoteRead, 0x10800, 1) != InvalidSTag {
		t.Fatal("STag valid after unbind")
	}
	if inv := tab.BeginUnbind(w); !inv.Drained() {
		t.Fatal("second unbind has something to wait for")
	}
	s3 := bind(t, tab, w, p, 0x10000, 4096, AccessRemoteRead)
	if s3 == s2 {
		t.Fatal("rebind after unbind reused the key")
	}
	s4, inv, err := tab.BeginBind(w, nil, 0, 0, 0)
	if err != nil || s4 != s3 || w.Bound() || !inv.Drained() {
		t.Fatalf("zero-length bind: %v %v bound %v", s4, err, w.Bound())
	}
	if pinReason(tab, s3, 1, AccessRemoteRead, 0x10000, 1) != InvalidSTag {
		t.Fatal("STag valid after a zero-length bind")
	}
	// The parent's own traffic never noticed.
	if why := pinReason(tab, p.STag(), 1, 0, 0x10000, 4096); why != OK {
		t.Fatalf("parent: %v", why)
	}
	if len(p.views) != 0 {
		t.Fatalf("parent keeps %d drained bindings", len(p.views))
	}
}

// TestWindowReasons: each Reason of an access through a window, identical
// from Check, Acquire and PinRemote, with the Terminate codes of a region's.
func TestWindowReasons(t *testing.T) {
	tab := NewTable(TableOptions{})
	p, _ := newRegion(t, tab, 1, 4096, parentAccess|AccessRemoteRead|AccessRemoteWrite, 0x10000)
	w := newWindow(t, tab, 1, WindowType1)
	old := bind(t, tab, w, p, 0x10000, 64, AccessRemoteRead)
	s := bind(t, tab, w, p, 0x10100, 256, AccessRemoteWrite)
	unbound := newWindow(t, tab, 1, WindowType1)
	w2 := newWindow(t, tab, 1, WindowType2)
	inval := bind(t, tab, w2, p, 0x10100, 256, AccessRemoteWrite)
	if _, why := tab.CheckLocalInvalidate(inval, 1); why != InvalidateOK {
		t.Fatal(why)
	}
	if _, why := tab.BeginInvalidate(tab.Lookup(inval), inval); why != InvalidateOK {
		t.Fatal(why)
	}
	cases := []struct {
		name string
		stag STag
		pd   uint32
		need Access
		to   uint64
		n    uint64
		want Reason
		ddp  rdma.TermCode
		rd   rdma.TermCode
	}{
		{"ok", s, 1, AccessRemoteWrite, 0x10100, 256, OK, 0, 0},
		{"ok-empty-at-end", s, 1, AccessRemoteWrite, 0x10200, 0, OK, 0, 0},
		{"below-window", s, 1, AccessRemoteWrite, 0x100ff, 2, OutOfBounds, rdma.TermDDPBaseBounds, rdma.TermRDMAPBaseBounds},
		{"past-window", s, 1, AccessRemoteWrite, 0x101ff, 2, OutOfBounds, rdma.TermDDPBaseBounds, rdma.TermRDMAPBaseBounds},
		{"parent-only", s, 1, AccessRemoteWrite, 0x10000, 1, OutOfBounds, rdma.TermDDPBaseBounds, rdma.TermRDMAPBaseBounds},
		{"wrap", s, 1, AccessRemoteWrite, ^uint64(0) - 1, 4, TOWrap, rdma.TermDDPTOWrap, rdma.TermRDMAPTOWrap},
		{"read-not-granted", s, 1, AccessRemoteRead, 0x10100, 1, AccessViolated, rdma.TermDDPInvalidSTag, rdma.TermRDMAPAccessRights},
		{"atomic-not-granted", s, 1, AccessRemoteAtomic, 0x10100, 8, AccessViolated, rdma.TermDDPInvalidSTag, rdma.TermRDMAPAccessRights},
		{"other-pd", s, 2, AccessRemoteWrite, 0x10100, 1, NotAssociated, rdma.TermDDPSTagNotAssoc, rdma.TermRDMAPSTagNotAssoc},
		{"wrong-key", s ^ 0x80, 1, AccessRemoteWrite, 0x10100, 1, InvalidSTag, rdma.TermDDPInvalidSTag, rdma.TermRDMAPInvalidSTag},
		{"old-key-after-rebind", old, 1, AccessRemoteRead, 0x10000, 1, InvalidSTag, rdma.TermDDPInvalidSTag, rdma.TermRDMAPInvalidSTag},
		{"unbound", unbound.STag(), 1, AccessRemoteRead, 0x10000, 1, InvalidSTag, rdma.TermDDPInvalidSTag, rdma.TermRDMAPInvalidSTag},
		{"invalidated", inval, 1, AccessRemoteWrite, 0x10100, 1, InvalidSTag, rdma.TermDDPInvalidSTag, rdma.TermRDMAPInvalidSTag},
	}
	for _, c := range cases {
		_, why := tab.Check(c.stag, c.pd, c.need, c.to, c.n)
		if why != c.want {
			t.Errorf("%s: Check %v, want %v", c.name, why, c.want)
		}
		if why != OK && (why.DDPCode() != c.ddp || why.RDMAPCode() != c.rd) {
			t.Errorf("%s: codes %v / %v", c.name, why.DDPCode(), why.RDMAPCode())
		}
		b, v, why2 := tab.Acquire(c.stag, c.pd, c.need, c.to, c.n)
		if why2 != c.want {
			t.Errorf("%s: Acquire %v", c.name, why2)
		} else if why2 == OK {
			if uint64(len(b)) != c.n || v.Window() != w {
				t.Errorf("%s: Acquire gave %d bytes", c.name, len(b))
			}
			v.Release()
		}
		if why3 := pinReason(tab, c.stag, c.pd, c.need, c.to, c.n); why3 != c.want {
			t.Errorf("%s: PinRemote %v", c.name, why3)
		}
		if _, why4 := tab.CheckLocal(c.stag, c.pd, 0, c.to, c.n); why4 != InvalidSTag {
			t.Errorf("%s: local use of a window's STag: %v", c.name, why4)
		}
	}
	// The parent invalid: the binding fails as an invalid STag even before
	// its own state changes (checked on the parent's state word).
	v := w.Binding()
	p.state.Store(p.state.Load() &^ validBit)
	if why := pinReason(tab, s, 1, AccessRemoteWrite, 0x10100, 1); why != InvalidSTag {
		t.Errorf("parent invalid: %v", why)
	}
	p.state.Store(p.state.Load() | validBit)
	for _, r := range []*Region{v, w2.Binding()} {
		if lw := r.life.Load(); slotPins(lw, 0)|slotPins(lw, 1) != 0 || r.legacy.Load() != 0 || r.stale.Load() != 0 {
			t.Fatalf("pins left on a binding: %x", lw)
		}
	}
	if _, why := tab.CheckLocal(p.STag(), 1, AccessLocalWrite, 0x10000, 4096); why != OK {
		t.Errorf("CheckLocal of the region: %v", why)
	}
	if _, why := tab.CheckLocal(p.STag(), 1, AccessRemoteRead, 0x10000, 1); why != AccessViolated {
		t.Errorf("CheckLocal asking for a remote right: %v", why)
	}
	if v.LocalWord(0x10100) {
		t.Error("LocalWord on a binding")
	}
}

// TestWindowBindRules: every bind check, table-driven; a failed bind
// leaves a bound window as it was.
func TestWindowBindRules(t *testing.T) {
	tab := NewTable(TableOptions{})
	full, _ := newRegion(t, tab, 1, 4096, parentAccess|AccessRemoteRead, 0x10000)
	noBind, _ := newRegion(t, tab, 1, 4096, AccessLocalWrite|AccessRemoteRead, 0x10000)
	noWrite, _ := newRegion(t, tab, 1, 4096, AccessMWBind, 0x10000)
	otherPD, _ := newRegion(t, tab, 2, 4096, parentAccess, 0x10000)
	odd, _ := newRegion(t, tab, 1, 4096, parentAccess, 0x10004)
	invalid, _ := newRegion(t, tab, 1, 4096, parentAccess, 0)
	if _, err := tab.BeginInvalidate(invalid, invalid.STag()); err != InvalidateOK {
		t.Fatal(err)
	}
	dereg, _ := newRegion(t, tab, 1, 4096, parentAccess, 0)
	tab.BeginDeregister(dereg)
	rw := AccessRemoteRead | AccessRemoteWrite
	w1 := newWindow(t, tab, 1, WindowType1)
	other := newWindow(t, tab, 1, WindowType1)
	otherS := bind(t, tab, other, full, 0x10000, 8, AccessRemoteRead)
	view := other.Binding()
	cases := []struct {
		name   string
		typ    WindowType
		parent *Region
		base   uint64
		n      uint64
		a      Access
		want   error
	}{
		{"whole", WindowType1, full, 0x10000, 4096, rw | AccessRemoteAtomic, nil},
		{"inner", WindowType2, full, 0x10ff0, 16, AccessRemoteRead, nil},
		{"no-rights", WindowType1, full, 0x10000, 1, 0, nil},
		{"read-only-parent-ok", WindowType1, noWrite, 0x10000, 8, AccessRemoteRead, nil},
		{"type2-remote-invalidate", WindowType2, full, 0x10000, 8, AccessRemoteRead | AccessRemoteInvalidate, nil},
		{"type1-remote-invalidate", WindowType1, full, 0x10000, 8, AccessRemoteRead | AccessRemoteInvalidate, ErrWindowAccess},
		{"local-write-right", WindowType1, full, 0x10000, 8, AccessLocalWrite, ErrWindowAccess},
		{"mw-bind-right", WindowType2, full, 0x10000, 8, AccessMWBind, ErrWindowAccess},
		{"unknown-right", WindowType1, full, 0x10000, 8, 1 << 12, ErrWindowAccess},
		{"below", WindowType1, full, 0xffff, 2, AccessRemoteRead, ErrWindowBounds},
		{"past", WindowType1, full, 0x10fff, 2, AccessRemoteRead, ErrWindowBounds},
		{"too-long", WindowType1, full, 0x10000, 4097, AccessRemoteRead, ErrWindowBounds},
		{"wrap", WindowType1, full, ^uint64(0) - 3, 8, AccessRemoteRead, ErrWindowBounds},
		{"no-mw-bind", WindowType1, noBind, 0x10000, 8, AccessRemoteRead, ErrNoMWBind},
		{"write-needs-local-write", WindowType1, noWrite, 0x10000, 8, AccessRemoteWrite, ErrWindowLocalWrite},
		{"atomic-needs-local-write", WindowType2, noWrite, 0x10000, 8, AccessRemoteAtomic, ErrWindowLocalWrite},
		{"other-pd", WindowType1, otherPD, 0x10000, 8, AccessRemoteRead, ErrWindowPD},
		{"atomic-misaligned-base", WindowType1, full, 0x10004, 8, AccessRemoteAtomic, ErrAtomicAligned},
		{"atomic-misaligned-parent", WindowType1, odd, 0x10008, 8, AccessRemoteAtomic, ErrAtomicAligned},
		{"atomic-host-aligned-in-odd-parent", WindowType1, odd, 0x1000c, 8, AccessRemoteAtomic, ErrAtomicAligned},
		{"parent-invalid", WindowType1, invalid, 0, 8, AccessRemoteRead, ErrParentInvalid},
		{"parent-deregistered", WindowType1, dereg, 0, 8, AccessRemoteRead, ErrDeregistered},
		{"parent-nil", WindowType1, nil, 0, 8, AccessRemoteRead, ErrWindowParent},
		{"parent-is-binding", WindowType1, view, 0x10000, 8, AccessRemoteRead, ErrWindowParent},
		{"type2-zero-length", WindowType2, full, 0x10000, 0, AccessRemoteRead, ErrWindowEmpty},
	}
	for _, c := range cases {
		w := newWindow(t, tab, 1, c.typ)
		s0 := w.STag()
		s, inv, err := tab.BeginBind(w, c.parent, c.base, c.n, c.a)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if err != nil {
			if w.Bound() || w.STag() != s0 || inv != nil {
				t.Errorf("%s: a failed bind changed the window", c.name)
			}
		} else {
			if !w.Bound() || s != w.STag() || s == s0 || w.Binding().Access() != c.a {
				t.Errorf("%s: bound %v STag %v", c.name, w.Bound(), s)
			}
		}
		// The same bind on a bound type 1 window fails the same way and
		// leaves the binding alone.
		s1 := bind(t, tab, w1, full, 0x10000, 64, AccessRemoteRead)
		_, _, err = tab.BeginBind(w1, c.parent, c.base, c.n, c.a)
		if c.typ == WindowType1 && !errors.Is(err, c.want) {
			t.Errorf("%s: rebind %v", c.name, err)
		}
		if err != nil && c.n != 0 && (!w1.Bound() || w1.STag() != s1) {
			t.Errorf("%s: a failed rebind unbound the window", c.name)
		}
		tab.BeginUnbind(w1)
	}
	if why := pinReason(tab, otherS, 1, AccessRemoteRead, 0x10000, 8); why != OK {
		t.Errorf("unrelated window: %v", why)
	}
	// Type 2: bound, it must be invalidated first.
	w2 := newWindow(t, tab, 1, WindowType2)
	s2 := bind(t, tab, w2, full, 0x10000, 8, AccessRemoteRead)
	if _, _, err := tab.BeginBind(w2, full, 0x10000, 16, AccessRemoteRead); !errors.Is(err, ErrWindowBound) {
		t.Fatalf("rebind of a bound type 2: %v", err)
	}
	if !w2.Bound() || w2.STag() != s2 {
		t.Fatal("refused rebind changed the type 2 window")
	}
	if _, err := tab.AllocWindow(1, 3); !errors.Is(err, ErrWindowType) {
		t.Fatalf("type 3: %v", err)
	}
	// A deallocated window refuses binds and unbinds.
	if err := tab.DeallocWindow(context.Background(), w2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tab.BeginBind(w2, full, 0x10000, 8, AccessRemoteRead); !errors.Is(err, ErrDeallocated) {
		t.Fatalf("bind after dealloc: %v", err)
	}
	if _, _, err := tab.BeginBind(w1, full, 0x10000, 0, 0); err != nil {
		t.Fatalf("zero-length bind of an unbound type 1: %v", err)
	}
	w3 := newWindow(t, tab, 1, WindowType1)
	tab.BeginDealloc(w3)
	if _, _, err := tab.BeginBind(w3, full, 0x10000, 0, 0); !errors.Is(err, ErrDeallocated) {
		t.Fatalf("zero-length bind after dealloc: %v", err)
	}
	// Rekey of a binding is refused; the parent's rekey without MW bind
	// refuses new binds.
	if _, err := tab.Rekey(w1.Binding(), AccessRemoteRead); !errors.Is(err, ErrWindowRekey) {
		t.Fatalf("rekey of a binding: %v", err)
	}
	if _, err := tab.Rekey(full, AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tab.BeginBind(w1, full, 0x10000, 8, AccessRemoteRead); !errors.Is(err, ErrNoMWBind) {
		t.Fatalf("bind after rekey without MW bind: %v", err)
	}
}

// TestWindowInvalidate: a type 1 window refuses Local and Remote
// Invalidate with the protection error; a type 2 accepts Local Invalidate,
// and a Remote one when bound with remote-invalidate right.
func TestWindowInvalidate(t *testing.T) {
	ctx := context.Background()
	tab := NewTable(TableOptions{})
	p, _ := newRegion(t, tab, 1, 4096, parentAccess, 0)

	w1 := newWindow(t, tab, 1, WindowType1)
	s1 := bind(t, tab, w1, p, 0, 64, AccessRemoteWrite)
	for _, remote := range []bool{false, true} {
		check := tab.CheckLocalInvalidate
		if remote {
			check = tab.CheckRemoteInvalidate
		}
		r, why := check(s1, 1)
		if r != nil || why != InvalidateNotAllowed || why.TermCode() != rdma.TermRDMAPProtInvalidate {
			t.Fatalf("type 1, remote %v: %v (%v)", remote, why, why.TermCode())
		}
		if _, why := check(s1, 2); why != InvalidateOtherPD {
			t.Fatalf("type 1, other PD: %v", why)
		}
	}
	v1 := w1.Binding()
	if _, why := tab.BeginInvalidate(v1, s1); why != InvalidateNotAllowed || !w1.Bound() {
		t.Fatalf("BeginInvalidate of a type 1 binding: %v, bound %v", why, w1.Bound())
	}
	if err := tab.Invalidate(ctx, v1); !errors.Is(err, ErrWindowType1) {
		t.Fatalf("Invalidate of a type 1 binding: %v", err)
	}
	if err := tab.InvalidateSTag(ctx, v1, s1); !errors.Is(err, ErrWindowType1) || !w1.Bound() {
		t.Fatalf("InvalidateSTag of a type 1 binding: %v", err)
	}

	// Type 2 without the remote-invalidate right: local only.
	w2 := newWindow(t, tab, 1, WindowType2)
	s2 := bind(t, tab, w2, p, 0, 64, AccessRemoteWrite)
	if _, why := tab.CheckRemoteInvalidate(s2, 1); why != InvalidateNotAllowed {
		t.Fatalf("type 2 without remote invalidate: %v", why)
	}
	r, why := tab.CheckLocalInvalidate(s2, 1)
	if why != InvalidateOK || r != w2.Binding() {
		t.Fatalf("type 2 local invalidate: %v", why)
	}
	inv, why := tab.BeginInvalidate(r, s2)
	if why != InvalidateOK || !inv.Drained() || w2.Bound() {
		t.Fatalf("type 2 BeginInvalidate: %v bound %v", why, w2.Bound())
	}
	if pinReason(tab, s2, 1, AccessRemoteWrite, 0, 1) != InvalidSTag {
		t.Fatal("invalidated type 2 still accessible")
	}
	if _, why := tab.CheckLocalInvalidate(s2, 1); why != InvalidateUnknown {
		t.Fatalf("second local invalidate: %v", why)
	}
	if _, why := tab.BeginInvalidate(r, s2); why != InvalidateUnknown {
		t.Fatalf("second BeginInvalidate: %v", why)
	}

	// Bound again (allowed now), with the remote-invalidate right.
	s3 := bind(t, tab, w2, p, 64, 64, AccessRemoteRead|AccessRemoteInvalidate)
	if s3 == s2 {
		t.Fatal("same key")
	}
	if _, why := tab.CheckRemoteInvalidate(s2, 1); why != InvalidateUnknown {
		t.Fatalf("old STag: %v", why)
	}
	if _, why := tab.CheckRemoteInvalidate(s3, 2); why != InvalidateOtherPD {
		t.Fatalf("other PD: %v", why)
	}
	r, why = tab.CheckRemoteInvalidate(s3, 1)
	if why != InvalidateOK {
		t.Fatalf("remote invalidate: %v", why)
	}
	if err := tab.InvalidateSTag(ctx, r, s3); err != nil || w2.Bound() {
		t.Fatalf("InvalidateSTag: %v", err)
	}
	// Invalidate of a binding that was already unbound has nothing to do.
	if err := tab.Invalidate(ctx, r); err != nil {
		t.Fatal(err)
	}
	// An unbound or never-bound window's STag cannot be invalidated.
	w4 := newWindow(t, tab, 1, WindowType2)
	if _, why := tab.CheckRemoteInvalidate(w4.STag(), 1); why != InvalidateUnknown {
		t.Fatalf("never bound: %v", why)
	}
	if p.Valid() != true {
		t.Fatal("parent invalidated with its window")
	}
}

// parentBegin is one of the Begins that end a parent's generation.
type parentBegin struct {
	name  string
	begin func(tab *Table, p *Region) *Invalidation
}

var parentBegins = []parentBegin{
	{"deregister", func(tab *Table, p *Region) *Invalidation { return tab.BeginDeregister(p) }},
	{"invalidate", func(tab *Table, p *Region) *Invalidation {
		inv, why := tab.BeginInvalidate(p, p.STag())
		if why != InvalidateOK {
			panic(why)
		}
		return inv
	}},
	{"rekey", func(tab *Table, p *Region) *Invalidation {
		_, inv, err := tab.BeginRekey(p, parentAccess|AccessRemoteRead)
		if err != nil {
			panic(err)
		}
		return inv
	}},
}

// TestWindowParentLifetime: deregistering, invalidating or re-keying the
// parent unbinds every window bound to it, and its Invalidation waits for
// pins and leases taken through them.
func TestWindowParentLifetime(t *testing.T) {
	for _, pb := range parentBegins {
		t.Run(pb.name, func(t *testing.T) {
			tab := NewTable(TableOptions{})
			p, _ := newRegion(t, tab, 1, 4096, parentAccess|AccessRemoteRead, 0)
			other, _ := newRegion(t, tab, 1, 4096, parentAccess, 0)
			w1 := newWindow(t, tab, 1, WindowType1)
			w2 := newWindow(t, tab, 1, WindowType2)
			w3 := newWindow(t, tab, 1, WindowType1)
			s1 := bind(t, tab, w1, p, 0, 64, AccessRemoteWrite)
			s2 := bind(t, tab, w2, p, 64, 64, AccessRemoteRead)
			s3 := bind(t, tab, w3, other, 0, 64, AccessRemoteRead)
			_, v1, g1, why := tab.PinRemote(s1, 1, AccessRemoteWrite, 0, 8)
			if why != OK {
				t.Fatal(why)
			}
			_, v2, g2, why := tab.PinRemote(s2, 1, AccessRemoteRead, 64, 8)
			if why != OK {
				t.Fatal(why)
			}
			h := &holder{}
			if !v2.Lease(g2, h) {
				t.Fatal("lease through the window refused")
			}
			v2.Unpin(g2)

			inv := pb.begin(tab, p)
			if w1.Bound() || w2.Bound() || !w3.Bound() {
				t.Fatalf("after the parent's %s: bound %v %v %v", pb.name, w1.Bound(), w2.Bound(), w3.Bound())
			}
			for _, s := range []STag{s1, s2} {
				if why := pinReason(tab, s, 1, AccessRemoteRead|AccessRemoteWrite, 0, 0); why != InvalidSTag {
					t.Fatalf("window STag after the parent's %s: %v", pb.name, why)
				}
			}
			if why := pinReason(tab, s3, 1, AccessRemoteRead, 0, 8); why != OK {
				t.Fatalf("other parent's window: %v", why)
			}
			if inv.Drained() {
				t.Fatal("drained with a pin and a lease through its windows")
			}
			v1.Unpin(g1)
			if inv.Drained() {
				t.Fatal("drained with a lease through a window")
			}
			if !inv.Leases() {
				t.Fatal("Leases misses a lease through a window")
			}
			// The lease holder may still pin the leased bytes.
			if !v2.PinLeased(g2, h) {
				t.Fatal("PinLeased through the unbound window refused")
			}
			v2.EndLease(g2, h)
			if inv.Drained() {
				t.Fatal("drained with a PinLeased pin")
			}
			v2.Unpin(g2)
			if !inv.Drained() {
				t.Fatal("not drained once every pin and lease is gone")
			}
			if len(p.views) != 0 || len(inv.views) != 0 {
				t.Fatalf("bindings left: %d %d", len(p.views), len(inv.views))
			}
			if pb.name == "rekey" {
				// The parent is valid again: windows can be bound to it.
				bind(t, tab, w1, p, 0, 8, AccessRemoteRead)
			} else if _, _, err := tab.BeginBind(w1, p, 0, 8, AccessRemoteRead); err == nil {
				t.Fatal("bound to an invalid parent")
			}
		})
	}
}

// TestWindowParentWaitsForUnboundWindow: a window unbound by its owner but
// still draining (a pin through it) holds up its parent's deregistration.
func TestWindowParentWaitsForUnboundWindow(t *testing.T) {
	tab := NewTable(TableOptions{})
	p, _ := newRegion(t, tab, 1, 4096, parentAccess, 0)
	w := newWindow(t, tab, 1, WindowType2)
	s := bind(t, tab, w, p, 0, 64, AccessRemoteWrite)
	_, v, g, why := tab.PinRemote(s, 1, AccessRemoteWrite, 0, 8)
	if why != OK {
		t.Fatal(why)
	}
	winv, why2 := tab.BeginInvalidate(v, s)
	if why2 != InvalidateOK || winv.Drained() {
		t.Fatalf("Local Invalidate: %v", why2)
	}
	pinv := tab.BeginDeregister(p)
	if pinv.Drained() {
		t.Fatal("deregistration drained with a pin through an unbound window")
	}
	v.Unpin(g)
	if !winv.Drained() || !pinv.Drained() {
		t.Fatal("not drained after the unpin")
	}
}

// TestWindowUnbindWaits: an unbind (and a rebind, a dealloc, the parent's
// deregistration) of a window waits for a pin and a lease taken through
// it: Wait returns only after their release.
func TestWindowUnbindWaits(t *testing.T) {
	ops := []struct {
		name  string
		begin func(tab *Table, w *Window, p *Region) *Invalidation
	}{
		{"unbind", func(tab *Table, w *Window, _ *Region) *Invalidation { return tab.BeginUnbind(w) }},
		{"rebind", func(tab *Table, w *Window, p *Region) *Invalidation {
			_, inv, err := tab.BeginBind(w, p, 128, 64, AccessRemoteRead)
			if err != nil {
				panic(err)
			}
			return inv
		}},
		{"dealloc", func(tab *Table, w *Window, _ *Region) *Invalidation { return tab.BeginDealloc(w) }},
		{"zero-length-bind", func(tab *Table, w *Window, _ *Region) *Invalidation {
			_, inv, _ := tab.BeginBind(w, nil, 0, 0, 0)
			return inv
		}},
		{"parent-deregister", func(tab *Table, _ *Window, p *Region) *Invalidation { return tab.BeginDeregister(p) }},
	}
	for _, op := range ops {
		for _, lease := range []bool{false, true} {
			name := op.name + "/pin"
			if lease {
				name = op.name + "/lease"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					tab := NewTable(TableOptions{})
					p, _ := newRegion(t, tab, 1, 4096, parentAccess, 0)
					w := newWindow(t, tab, 1, WindowType1)
					s := bind(t, tab, w, p, 0, 64, AccessRemoteRead)
					b, v, g, why := tab.PinRemote(s, 1, AccessRemoteRead, 0, 64)
					if why != OK {
						t.Fatal(why)
					}
					h := &holder{}
					if lease {
						if !v.Lease(g, h) {
							t.Fatal("lease refused")
						}
						v.Unpin(g)
					}
					inv := op.begin(tab, w, p)
					if pinReason(tab, s, 1, AccessRemoteRead, 0, 1) != InvalidSTag {
						t.Fatal("STag still valid")
					}
					returned := make(chan error, 1)
					go func() { returned <- inv.Wait(context.Background()) }()
					synctest.Wait()
					select {
					case err := <-returned:
						t.Fatalf("Wait returned %v while bytes may move through the window", err)
					default:
					}
					if lease {
						// Leased bytes still move: under PinLeased.
						if !v.PinLeased(g, h) {
							t.Fatal("PinLeased refused")
						}
						_ = b[0]
						v.Unpin(g)
						synctest.Wait()
						if len(returned) != 0 {
							t.Fatal("Wait returned with the lease held")
						}
						v.EndLease(g, h)
					} else {
						_ = b[0]
						v.Unpin(g)
					}
					synctest.Wait()
					select {
					case err := <-returned:
						if err != nil {
							t.Fatal(err)
						}
					default:
						t.Fatal("Wait did not return after the release")
					}
				})
			})
		}
	}
}

// TestWindowBlockingCallsRevoke: the blocking calls whose context ends
// revoke the holders of leases taken through the window, wait for its
// transient pins only, and return a *RevokedError; the parent's
// Deregister does so for its windows' leases too.
func TestWindowBlockingCallsRevoke(t *testing.T) {
	calls := []struct {
		name string
		call func(ctx context.Context, tab *Table, w *Window, p *Region) error
		what string
	}{
		{"Unbind", func(ctx context.Context, tab *Table, w *Window, _ *Region) error { return tab.Unbind(ctx, w) }, "unbind"},
		{"BindContext", func(ctx context.Context, tab *Table, w *Window, p *Region) error {
			_, err := tab.BindContext(ctx, w, p, 0, 8, AccessRemoteRead)
			return err
		}, "bind"},
		{"DeallocWindow", func(ctx context.Context, tab *Table, w *Window, _ *Region) error { return tab.DeallocWindow(ctx, w) }, "deallocation"},
		{"Deregister", func(ctx context.Context, tab *Table, _ *Window, p *Region) error { return tab.Deregister(ctx, p) }, "deregistration"},
		{"RekeyContext", func(ctx context.Context, tab *Table, _ *Window, p *Region) error {
			_, err := tab.RekeyContext(ctx, p, parentAccess)
			return err
		}, "re-key"},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			tab := NewTable(TableOptions{})
			p, _ := newRegion(t, tab, 1, 4096, parentAccess, 0)
			w := newWindow(t, tab, 1, WindowType1)
			s := bind(t, tab, w, p, 0, 64, AccessRemoteRead)
			_, v, g, why := tab.PinRemote(s, 1, AccessRemoteRead, 0, 64)
			if why != OK {
				t.Fatal(why)
			}
			h := &holder{endOnRevoke: true}
			h.lease(t, v, g)
			v.Unpin(g)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := c.call(ctx, tab, w, p)
			var re *RevokedError
			if !errors.As(err, &re) || !errors.Is(err, context.Canceled) || re.Holders != 1 || re.InUse || re.What != c.what {
				t.Fatalf("%v (%+v)", err, re)
			}
			if h.revoked.Load() != 1 || v.PinLeased(g, h) {
				t.Fatalf("holder revoked %d times", h.revoked.Load())
			}
		})
	}
	// A pin of Acquire through the window: the call does not finish.
	tab := NewTable(TableOptions{})
	p, _ := newRegion(t, tab, 1, 4096, parentAccess, 0)
	w := newWindow(t, tab, 1, WindowType1)
	s := bind(t, tab, w, p, 0, 64, AccessRemoteRead)
	_, v, why := tab.Acquire(s, 1, AccessRemoteRead, 0, 8)
	if why != OK {
		t.Fatal(why)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var re *RevokedError
	if err := tab.Deregister(ctx, p); !errors.As(err, &re) || !re.InUse {
		t.Fatalf("Deregister with an Acquire through a window: %v", err)
	}
	if err := tab.DeallocWindow(ctx, w); !errors.As(err, &re) || !re.InUse {
		t.Fatalf("DeallocWindow with an Acquire: %v", err)
	}
	v.Release()
	if err := tab.Deregister(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := tab.DeallocWindow(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if err := tab.DeallocWindow(context.Background(), w); !errors.Is(err, ErrDeallocated) {
		t.Fatalf("second DeallocWindow: %v", err)
	}
}

// TestWindowDealloc: deallocation takes the window out of the table and
// its index is not reused at once.
func TestWindowDealloc(t *testing.T) {
	tab := NewTable(TableOptions{MaxRegions: 2})
	p, _ := newRegion(t, tab, 1, 64, parentAccess, 0)
	w := newWindow(t, tab, 1, WindowType2)
	if _, err := tab.AllocWindow(1, WindowType1); !errors.Is(err, ErrTableFull) {
		t.Fatalf("windows count against MaxRegions: %v", err)
	}
	s := bind(t, tab, w, p, 0, 64, AccessRemoteRead)
	if err := tab.DeallocWindow(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if tab.Windows() != 0 || tab.Lookup(s) != nil || w.Bound() {
		t.Fatal("window still in the table")
	}
	if pinReason(tab, s, 1, AccessRemoteRead, 0, 1) != InvalidSTag {
		t.Fatal("STag valid after dealloc")
	}
	if inv := tab.BeginDealloc(w); !inv.Drained() {
		t.Fatal("second BeginDealloc")
	}
	if inv := tab.BeginUnbind(w); !inv.Drained() {
		t.Fatal("unbind after dealloc")
	}
	if !tab.qset[s.Index()] {
		t.Fatal("index not quarantined")
	}
	w2 := newWindow(t, tab, 1, WindowType1)
	if w2.STag().Index() == s.Index() {
		t.Fatal("index reused")
	}
	// Deallocating a never-bound window.
	if err := tab.DeallocWindow(context.Background(), w2); err != nil {
		t.Fatal(err)
	}
	// Deregistering a binding unbinds the window, which stays allocated.
	w3 := newWindow(t, tab, 1, WindowType1)
	s3 := bind(t, tab, w3, p, 0, 8, AccessRemoteRead)
	if err := tab.Deregister(context.Background(), w3.Binding()); err != nil {
		t.Fatal(err)
	}
	if w3.Bound() || tab.Windows() != 1 || tab.Lookup(s3) == nil || pinReason(tab, s3, 1, AccessRemoteRead, 0, 1) != InvalidSTag {
		t.Fatal("deregistration of a binding")
	}
}

// TestWindowAtomics: an atomic through a window lands in the parent's word
// at the same TO; the target's alignment is checked as for a region.
func TestWindowAtomics(t *testing.T) {
	tab := NewTable(TableOptions{})
	p, buf := newRegion(t, tab, 1, 64, parentAccess, 0x1000)
	w := newWindow(t, tab, 1, WindowType1)
	s := bind(t, tab, w, p, 0x1010, 16, AccessRemoteAtomic)
	v, why := tab.AcquireAtomic(s, 1, 0x1018)
	if why != OK {
		t.Fatal(why)
	}
	if old := v.AtomicFetchAdd(0x1018, 5, 0); old != 0 {
		t.Fatalf("original %d", old)
	}
	v.Release()
	if buf[0x18] != 5 {
		t.Fatalf("atomic landed elsewhere: %v", buf[0x10:0x20])
	}
	if _, why := tab.AcquireAtomic(s, 1, 0x1014); why != Misaligned {
		t.Fatalf("misaligned: %v", why)
	}
	if _, why := tab.AcquireAtomic(s, 1, 0x1008); why != OutOfBounds {
		t.Fatalf("outside the window: %v", why)
	}
	if v.legacy.Load() != 0 {
		t.Fatal("pins left")
	}
}

// TestAccessMWBindString: the new right has a name.
func TestAccessMWBindString(t *testing.T) {
	if s := (AccessMWBind | AccessLocalWrite).String(); s != "local-write|mw-bind" {
		t.Fatalf("%q", s)
	}
	if WindowType1.String() != "type 1" || WindowType2.String() != "type 2" || WindowType(0).String() != "unknown type" {
		t.Fatal("WindowType names")
	}
}

// TestWindowHotPathAllocs: the remote checks and pins through a window,
// and a lease on its binding, allocate nothing.
func TestWindowHotPathAllocs(t *testing.T) {
	tab := NewTable(TableOptions{})
	p, _ := newRegion(t, tab, 1, 4096, parentAccess, 0)
	w := newWindow(t, tab, 1, WindowType1)
	s := bind(t, tab, w, p, 1024, 1024, AccessRemoteWrite|AccessRemoteRead)
	h := &holder{}
	cases := []struct {
		name string
		f    func()
	}{
		{"PinRemote/Unpin", func() {
			b, v, g, why := tab.PinRemote(s, 1, AccessRemoteWrite, 1100, 200)
			if why != OK || len(b) != 200 {
				panic("PinRemote failed")
			}
			v.Unpin(g)
		}},
		{"PinRemote-fails", func() {
			if _, _, _, why := tab.PinRemote(s, 1, AccessRemoteWrite, 0, 1); why != OutOfBounds {
				panic("PinRemote passed")
			}
		}},
		{"Check", func() {
			if _, why := tab.Check(s, 1, AccessRemoteRead, 1024, 1024); why != OK {
				panic("Check failed")
			}
		}},
		{"Acquire/Release", func() {
			_, v, why := tab.Acquire(s, 1, AccessRemoteRead, 1024, 8)
			if why != OK {
				panic("Acquire failed")
			}
			v.Release()
		}},
		{"Lease/PinLeased/Unpin/EndLease", func() {
			_, v, g, why := tab.PinRemote(s, 1, AccessRemoteRead, 1024, 8)
			if why != OK || !v.Lease(g, h) {
				panic("lease failed")
			}
			v.Unpin(g)
			if !v.PinLeased(g, h) {
				panic("PinLeased failed")
			}
			v.Unpin(g)
			v.EndLease(g, h)
		}},
		{"CheckRemoteInvalidate", func() {
			if _, why := tab.CheckRemoteInvalidate(s, 1); why != InvalidateNotAllowed {
				panic("invalidate check")
			}
		}},
	}
	for _, c := range cases {
		if a := testing.AllocsPerRun(1000, c.f); a != 0 {
			t.Errorf("%s allocates %v per call", c.name, a)
		}
	}
}

func BenchmarkPinRemoteWindow(b *testing.B) {
	tab, r := benchRegion(b, AccessLocalWrite|AccessMWBind)
	w, err := tab.AllocWindow(1, WindowType1)
	if err != nil {
		b.Fatal(err)
	}
	s, err := tab.Bind(w, r, 0, 1<<20, AccessRemoteWrite)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_, p, g, _ := tab.PinRemote(s, 1, AccessRemoteWrite, 4096, 65536)
		p.Unpin(g)
	}
}

// BenchmarkPinRemoteWithWindows is BenchmarkPinRemote on a region with a
// window bound to it: the region path does not notice.
func BenchmarkPinRemoteWithWindows(b *testing.B) {
	tab, r := benchRegion(b, AccessLocalWrite|AccessMWBind|AccessRemoteWrite)
	w, err := tab.AllocWindow(1, WindowType1)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tab.Bind(w, r, 0, 1<<20, AccessRemoteWrite); err != nil {
		b.Fatal(err)
	}
	s := r.STag()
	for b.Loop() {
		_, p, g, _ := tab.PinRemote(s, 1, AccessRemoteWrite, 4096, 65536)
		p.Unpin(g)
	}
}
