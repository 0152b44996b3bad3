package mem

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/rdma"
)

func newRegion(t *testing.T, tab *Table, pd uint32, n int, a Access, base uint64) (*Region, []byte) {
	t.Helper()
	buf := unsafeBytes(make([]uint64, (n+7)/8))[:n]
	r, err := tab.Register(pd, buf, a, base)
	if err != nil {
		t.Fatal(err)
	}
	return r, buf
}

func TestCheckReasons(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 4096, AccessRemoteWrite|AccessRemoteRead, 0x10000)
	s := r.STag()
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
		{"ok", s, 1, AccessRemoteWrite, 0x10000, 4096, OK, rdma.TermDDPInvalidSTag, rdma.TermRDMAPInvalidSTag},
		{"ok-empty-at-end", s, 1, AccessRemoteRead, 0x11000, 0, OK, rdma.TermDDPInvalidSTag, rdma.TermRDMAPInvalidSTag},
		{"wrong-key", s ^ 1, 1, AccessRemoteWrite, 0x10000, 1, InvalidSTag, rdma.TermDDPInvalidSTag, rdma.TermRDMAPInvalidSTag},
		{"unknown-index", MakeSTag(s.Index()^1, s.Key()), 1, AccessRemoteWrite, 0x10000, 1, InvalidSTag, rdma.TermDDPInvalidSTag, rdma.TermRDMAPInvalidSTag},
		{"other-pd", s, 2, AccessRemoteWrite, 0x10000, 1, NotAssociated, rdma.TermDDPSTagNotAssoc, rdma.TermRDMAPSTagNotAssoc},
		{"no-access", s, 1, AccessRemoteAtomic, 0x10000, 8, AccessViolated, rdma.TermDDPInvalidSTag, rdma.TermRDMAPAccessRights},
		{"below-base", s, 1, AccessRemoteWrite, 0xffff, 2, OutOfBounds, rdma.TermDDPBaseBounds, rdma.TermRDMAPBaseBounds},
		{"past-end", s, 1, AccessRemoteWrite, 0x10fff, 2, OutOfBounds, rdma.TermDDPBaseBounds, rdma.TermRDMAPBaseBounds},
		{"wrap", s, 1, AccessRemoteWrite, ^uint64(0) - 1, 4, TOWrap, rdma.TermDDPTOWrap, rdma.TermRDMAPTOWrap},
	}
	for _, c := range cases {
		_, why := tab.Check(c.stag, c.pd, c.need, c.to, c.n)
		if why != c.want {
			t.Errorf("%s: reason %v, want %v", c.name, why, c.want)
		}
		if why != OK && (why.DDPCode() != c.ddp || why.RDMAPCode() != c.rd) {
			t.Errorf("%s: codes %v / %v, want %v / %v", c.name, why.DDPCode(), why.RDMAPCode(), c.ddp, c.rd)
		}
		b, pinned, why2 := tab.Acquire(c.stag, c.pd, c.need, c.to, c.n)
		if why2 != why {
			t.Errorf("%s: Acquire reason %v, Check %v", c.name, why2, why)
		}
		if why2 == OK {
			if uint64(len(b)) != c.n || cap(b) != len(b) {
				t.Errorf("%s: slice len %d cap %d", c.name, len(b), cap(b))
			}
			pinned.Release()
		}
	}
	if r.legacy.Load() != 0 {
		t.Fatalf("pins leaked: %d", r.legacy.Load())
	}
}

func TestAcquirePlacesInsideRegion(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, buf := newRegion(t, tab, 1, 64, AccessRemoteWrite, 1000)
	b, _, why := tab.Acquire(r.STag(), 1, AccessRemoteWrite, 1010, 4)
	if why != OK {
		t.Fatal(why)
	}
	copy(b, "abcd")
	r.Release()
	if string(buf[10:14]) != "abcd" || buf[9] != 0 || buf[14] != 0 {
		t.Fatalf("placed at the wrong offset: %q", buf[8:16])
	}
}

func TestRekeyAndInvalidate(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessRemoteWrite, 0)
	old := r.STag()
	ns, err := tab.Rekey(r, AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	if ns == old || ns.Index() != old.Index() {
		t.Fatalf("rekey gave %v from %v", ns, old)
	}
	if _, why := tab.Check(old, 1, AccessRemoteRead, 0, 1); why != InvalidSTag {
		t.Errorf("old STag after rekey: %v", why)
	}
	if _, why := tab.Check(ns, 1, AccessRemoteWrite, 0, 1); why != AccessViolated {
		t.Errorf("new access not applied: %v", why)
	}
	if err := tab.Invalidate(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, why := tab.Check(ns, 1, AccessRemoteRead, 0, 1); why != InvalidSTag {
		t.Errorf("after invalidate: %v", why)
	}
	if r.Valid() {
		t.Error("still valid")
	}
}

func TestDeregisterWaitsForPlacement(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessRemoteWrite, 0)
	s := r.STag()
	_, pinned, why := tab.Acquire(s, 1, AccessRemoteWrite, 0, 8)
	if why != OK {
		t.Fatal(why)
	}
	done := make(chan error, 1)
	go func() { done <- tab.Deregister(context.Background(), r) }()
	select {
	case err := <-done:
		t.Fatalf("Deregister returned %v while a placement was in flight", err)
	case <-time.After(20 * time.Millisecond):
	}
	// New arrivals fail at once, even before the drain finishes.
	if _, _, why := tab.Acquire(s, 1, AccessRemoteWrite, 0, 8); why != InvalidSTag {
		t.Errorf("new placement during deregistration: %v", why)
	}
	pinned.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 0 || tab.Lookup(s) != nil {
		t.Fatal("region still in the table")
	}
	if err := tab.Deregister(context.Background(), r); !errors.Is(err, ErrDeregistered) {
		t.Fatalf("second deregister: %v", err)
	}
}

func TestDeregisterContext(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessRemoteWrite, 0)
	_, pinned, _ := tab.Acquire(r.STag(), 1, AccessRemoteWrite, 0, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := tab.Deregister(ctx, r); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	pinned.Release()
	if err := tab.Deregister(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterErrors(t *testing.T) {
	tab := NewTable(TableOptions{MaxRegions: 1})
	if _, err := tab.Register(1, nil, AccessRemoteRead, 0); !errors.Is(err, ErrEmptyBuffer) {
		t.Error(err)
	}
	if _, err := tab.Register(1, make([]byte, 8), 1<<10, 0); !errors.Is(err, ErrBadAccess) {
		t.Error(err)
	}
	if _, err := tab.Register(1, make([]byte, 8), AccessRemoteRead, ^uint64(0)-3); !errors.Is(err, ErrBaseOverflow) {
		t.Error(err)
	}
	words := make([]uint64, 4)
	if _, err := tab.Register(1, unsafeBytes(words)[1:], AccessRemoteAtomic, 0); !errors.Is(err, ErrAtomicAligned) {
		t.Errorf("misaligned host address accepted for atomics: %v", err)
	}
	if _, err := tab.Register(1, unsafeBytes(words), AccessRemoteAtomic, 4); !errors.Is(err, ErrAtomicAligned) {
		t.Errorf("misaligned base accepted for atomics: %v", err)
	}
	if _, err := tab.Register(1, unsafeBytes(words), AccessRemoteAtomic, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Register(1, make([]byte, 8), AccessRemoteRead, 0); !errors.Is(err, ErrTableFull) {
		t.Errorf("limit not enforced: %v", err)
	}
}

func TestAcquireAtomic(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessRemoteAtomic, 0x100)
	if _, why := tab.AcquireAtomic(r.STag(), 1, 0x104); why != Misaligned {
		t.Errorf("misaligned: %v", why)
	}
	if why := Misaligned; why.RDMAPCode() != rdma.TermRDMAPStreamCatastroph {
		t.Errorf("misaligned code %v", why.RDMAPCode())
	}
	if _, why := tab.AcquireAtomic(r.STag(), 1, 0x13c); why != OutOfBounds {
		t.Errorf("straddling the end: %v", why)
	}
	p, why := tab.AcquireAtomic(r.STag(), 1, 0x138)
	if why != OK {
		t.Fatal(why)
	}
	p.Release()
	w, _ := newRegion(t, tab, 1, 64, AccessRemoteWrite, 0)
	if _, why := tab.AcquireAtomic(w.STag(), 1, 0); why != AccessViolated {
		t.Errorf("no atomic access: %v", why)
	}
	if r.legacy.Load() != 0 {
		t.Fatal("pin leaked")
	}
}

// TestIndexNotReused: a freed index stays out of use while quarantined,
// even when the random source keeps proposing it.
func TestIndexNotReused(t *testing.T) {
	seq := []uint32{0x000100aa, 0x000100bb, 0x000100cc, 0x000200dd, 0x000200ee}
	i := 0
	tab := NewTable(TableOptions{Random: func() uint32 { v := seq[i%len(seq)]; i++; return v }})
	r, _ := newRegion(t, tab, 1, 8, AccessRemoteRead, 0)
	first := r.STag().Index()
	if err := tab.Deregister(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r2, _ := newRegion(t, tab, 1, 8, AccessRemoteRead, 0)
	if r2.STag().Index() == first {
		t.Fatalf("index %x reused at once", first)
	}
}

func TestIndexNeverZero(t *testing.T) {
	n := 0
	tab := NewTable(TableOptions{Random: func() uint32 { n++; return uint32(n / 3) }})
	for k := 0; k < 3; k++ {
		r, _ := newRegion(t, tab, 1, 8, AccessRemoteRead, 0)
		if r.STag().Index() == 0 {
			t.Fatal("index 0 handed out")
		}
	}
}

func TestAcquireAllocs(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 4096, AccessRemoteWrite, 0)
	s := r.STag()
	allocs := testing.AllocsPerRun(1000, func() {
		b, p, why := tab.Acquire(s, 1, AccessRemoteWrite, 100, 200)
		if why != OK || len(b) != 200 {
			panic("acquire failed")
		}
		p.Release()
	})
	if allocs != 0 {
		t.Fatalf("Acquire allocates %v per call", allocs)
	}
}

func BenchmarkAcquire(b *testing.B) {
	tab := NewTable(TableOptions{})
	buf := make([]byte, 1<<20)
	r, _ := tab.Register(1, buf, AccessRemoteWrite, 0)
	s := r.STag()
	b.ReportAllocs()
	for b.Loop() {
		_, p, _ := tab.Acquire(s, 1, AccessRemoteWrite, 4096, 65536)
		p.Release()
	}
}
