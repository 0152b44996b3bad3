package freelist

import (
	"runtime"
	"sync"
	"testing"
)

// TestReuseAcrossGC is what sync.Pool does not give: an object put back
// is returned by the next Get, after garbage collections too.
func TestReuseAcrossGC(t *testing.T) {
	made := 0
	l := New(4, func() *[64]byte { made++; return new([64]byte) })
	x := l.Get()
	l.Put(x)
	runtime.GC()
	runtime.GC()
	if y := l.Get(); y != x || made != 1 {
		t.Fatalf("after two collections Get returned %p (put back %p), %d made", y, x, made)
	}
}

// TestBound drops what exceeds the bound.
func TestBound(t *testing.T) {
	l := New(2, func() *int { return new(int) })
	a, b, c := l.Get(), l.Get(), l.Get()
	l.Put(a)
	l.Put(b)
	l.Put(c)
	if n := l.Len(); n != 2 {
		t.Fatalf("holds %d, bound 2", n)
	}
}

// TestSteadyStateAllocsNothing: Get and Put from goroutines on any P
// allocate nothing once the List holds enough.
func TestSteadyStateAllocsNothing(t *testing.T) {
	l := New(8, func() *[1024]byte { return new([1024]byte) })
	l.Put(l.Get())
	if a := testing.AllocsPerRun(1000, func() { l.Put(l.Get()) }); a != 0 {
		t.Fatalf("%v allocations per Get and Put", a)
	}
}

// TestConcurrent runs Gets and Puts from many goroutines under -race: no
// object is handed to two holders at once.
func TestConcurrent(t *testing.T) {
	l := New(16, func() *int { return new(int) })
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 2000 {
				x := l.Get()
				if *x != 0 {
					t.Errorf("object in use by goroutine %d handed to %d", *x-1, g)
				}
				*x = g + 1
				runtime.Gosched()
				*x = 0
				l.Put(x)
			}
		})
	}
	wg.Wait()
}

// TestPutNil: a nil put back is ignored, so Get never returns nil.
func TestPutNil(t *testing.T) {
	l := New(2, func() *int { return new(int) })
	l.Put(nil)
	if x := l.Get(); x == nil {
		t.Fatal("Get returned the nil that was put back")
	}
}
