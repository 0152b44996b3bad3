// Package freelist keeps released objects for reuse: a bounded stack under
// a mutex, shared by every goroutine of the process.
//
// The hot paths of the engine take a buffer when a connection has work and
// give it back when it has none, so that an idle connection holds nothing.
// sync.Pool is the usual tool for that and the wrong one here: an object
// put back on one P sits in that P's private slot, which a Get on another
// P cannot see, and every garbage collection drops what the pools hold, so
// a steady stream of operations allocates now and then (a goroutine that
// moves between Ps, a collection triggered by unrelated garbage). A List
// keeps what it holds across collections and hands it to any goroutine;
// it allocates only when more objects are in use at once than were ever
// put back, and it retains at most its bound.
package freelist

import "sync"

// List is a bounded free list of *T. The zero value is not usable; use New.
type List[T any] struct {
	mu    sync.Mutex
	items []*T // owned by mu
	max   int
	fresh func() *T
}

// New returns a List that retains at most max objects and makes new ones
// with fresh.
func New[T any](max int, fresh func() *T) *List[T] {
	return &List[T]{items: make([]*T, 0, max), max: max, fresh: fresh}
}

// Get returns a held object, or a fresh one when none is held.
func (l *List[T]) Get() *T {
	l.mu.Lock()
	if n := len(l.items); n > 0 {
		x := l.items[n-1]
		l.items[n-1] = nil
		l.items = l.items[:n-1]
		l.mu.Unlock()
		return x
	}
	l.mu.Unlock()
	return l.fresh()
}

// Put gives x back for reuse; the List drops it (to the garbage collector)
// when it already holds its bound, and ignores nil. The caller must not
// use x afterwards, nor put it back twice: like sync.Pool, a List does not
// check that an object is returned once.
func (l *List[T]) Put(x *T) {
	if x == nil {
		return
	}
	l.mu.Lock()
	if len(l.items) < l.max {
		l.items = append(l.items, x)
	}
	l.mu.Unlock()
}

// Len returns how many objects the List holds.
func (l *List[T]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.items)
}
