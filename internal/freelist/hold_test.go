package freelist

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"weak"
)

// TestNoHiddenReference: an object taken with Get, or dropped at
// the bound, is not kept alive by the List's backing array.
func TestNoHiddenReference(t *testing.T) {
	l := New(2, func() *[4096]byte { return new([4096]byte) })
	a, b, c := l.Get(), l.Get(), l.Get()
	wa, wb, wc := weak.Make(a), weak.Make(b), weak.Make(c)
	l.Put(a)
	l.Put(b)
	l.Put(c) // over the bound: dropped
	if l.Len() != 2 {
		t.Fatalf("Len %d", l.Len())
	}
	x := l.Get() // b (LIFO)
	if x != b {
		t.Fatalf("not LIFO")
	}
	a, b, c, x = nil, nil, nil, nil
	runtime.GC()
	runtime.GC()
	if wb.Value() != nil {
		t.Errorf("an object taken out and dropped by its holder is still reachable (slot not cleared)")
	}
	if wc.Value() != nil {
		t.Errorf("an object put over the bound is still reachable")
	}
	if wa.Value() == nil {
		t.Errorf("a held object was collected")
	}
	runtime.KeepAlive(l)
}

// TestZeroBound retains nothing.
func TestZeroBound(t *testing.T) {
	made := 0
	l := New(0, func() *int { made++; return new(int) })
	x := l.Get()
	l.Put(x)
	if y := l.Get(); y == x || made != 2 || l.Len() != 0 {
		t.Fatalf("bound 0 retained an object")
	}
}

// TestConcurrentUnique hands objects between many goroutines with
// a bound smaller than the number in use, under -race: an object is never
// held twice at once, and the List never holds more than its bound.
func TestConcurrentUnique(t *testing.T) {
	var made atomic.Int64
	l := New(3, func() *atomic.Int32 { made.Add(1); return new(atomic.Int32) })
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			var held []*atomic.Int32
			for i := range 3000 {
				if len(held) < 4 && i%3 != 2 {
					x := l.Get()
					if !x.CompareAndSwap(0, 1) {
						t.Error("object handed to two holders")
						return
					}
					held = append(held, x)
				} else if len(held) > 0 {
					x := held[len(held)-1]
					held = held[:len(held)-1]
					x.Store(0)
					l.Put(x)
				}
				if n := l.Len(); n > 3 {
					t.Errorf("holds %d over bound 3", n)
					return
				}
			}
			for _, x := range held {
				x.Store(0)
				l.Put(x)
			}
		})
	}
	wg.Wait()
	if l.Len() != 3 {
		t.Fatalf("Len %d after all were put back", l.Len())
	}
}
