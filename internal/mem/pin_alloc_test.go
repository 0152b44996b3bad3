package mem

import (
	"sync/atomic"
	"testing"
)

// TestHotPathAllocs: Pin/Unpin, PinRemote/Unpin, PinLeased/Unpin and a
// lease in steady state allocate nothing.
func TestHotPathAllocs(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 4096, AccessRemoteWrite|AccessLocalWrite, 0)
	s, g := r.STag(), r.Gen()
	h := &holder{}
	cases := []struct {
		name string
		f    func()
	}{
		{"Pin/Unpin", func() {
			if !r.Pin(g) {
				panic("Pin failed")
			}
			r.Unpin(g)
		}},
		{"PinRemote/Unpin", func() {
			b, pr, pg, why := tab.PinRemote(s, 1, AccessRemoteWrite, 100, 200)
			if why != OK || len(b) != 200 {
				panic("PinRemote failed")
			}
			pr.Unpin(pg)
		}},
		{"Lease/PinLeased/Unpin/EndLease", func() {
			if !r.Lease(g, h) || !r.PinLeased(g, h) {
				panic("Lease failed")
			}
			r.Unpin(g)
			r.EndLease(g, h)
		}},
	}
	for _, c := range cases {
		if a := testing.AllocsPerRun(1000, c.f); a != 0 {
			t.Errorf("%s allocates %v per call", c.name, a)
		}
	}
}

// TestPinIsOneCAS: in the common case a pin is one compare-and-swap and an
// unpin another: the life word changes by exactly one count each, and a
// failed Pin leaves it untouched.
func TestPinIsOneCAS(t *testing.T) {
	tab := NewTable(TableOptions{})
	r, _ := newRegion(t, tab, 1, 64, AccessLocalWrite, 0)
	g := r.Gen()
	w0 := r.life.Load()
	r.Pin(g)
	if d := r.life.Load() - w0; d != 1<<slotShift(g) {
		t.Fatalf("Pin changed the word by %x", d)
	}
	r.Unpin(g)
	if r.life.Load() != w0 || r.Pin(g+1) || r.life.Load() != w0 {
		t.Fatal("Unpin or a failed Pin left the word changed")
	}
}

// benchRegion registers 1 MiB with the given access for a benchmark.
func benchRegion(b *testing.B, a Access) (*Table, *Region) {
	tab := NewTable(TableOptions{})
	r, err := tab.Register(1, make([]byte, 1<<20), a, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	return tab, r
}

func BenchmarkPinUnpin(b *testing.B) {
	_, r := benchRegion(b, AccessLocalWrite)
	g := r.Gen()
	for b.Loop() {
		r.Pin(g)
		r.Unpin(g)
	}
}

func BenchmarkPinRemote(b *testing.B) {
	tab, r := benchRegion(b, AccessRemoteWrite)
	s := r.STag()
	for b.Loop() {
		_, p, g, _ := tab.PinRemote(s, 1, AccessRemoteWrite, 4096, 65536)
		p.Unpin(g)
	}
}

// BenchmarkPinRemoteParallel: every goroutine pins the same region (the
// life word is the contended cache line).
func BenchmarkPinRemoteParallel(b *testing.B) {
	tab, r := benchRegion(b, AccessRemoteWrite)
	s := r.STag()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, p, g, _ := tab.PinRemote(s, 1, AccessRemoteWrite, 4096, 65536)
			p.Unpin(g)
		}
	})
}

func BenchmarkLease(b *testing.B) {
	_, r := benchRegion(b, AccessRemoteRead)
	g := r.Gen()
	h := &holder{}
	for b.Loop() {
		r.Lease(g, h)
		r.EndLease(g, h)
	}
}

// BenchmarkRekeyDrain: a re-key and its drain with nothing pinned.
func BenchmarkRekeyDrain(b *testing.B) {
	tab, r := benchRegion(b, AccessRemoteRead)
	var drained atomic.Int64
	for b.Loop() {
		_, inv, _ := tab.BeginRekey(r, AccessRemoteRead)
		if inv.Drained() {
			drained.Add(1)
		}
	}
	if drained.Load() == 0 {
		b.Fatal("never drained")
	}
}

// BenchmarkAcquireParallel is BenchmarkPinRemoteParallel for Acquire, the
// engine's pin of before (an add and a load), for comparison.
func BenchmarkAcquireParallel(b *testing.B) {
	tab, r := benchRegion(b, AccessRemoteWrite)
	s := r.STag()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, p, _ := tab.Acquire(s, 1, AccessRemoteWrite, 4096, 65536)
			p.Release()
		}
	})
}
