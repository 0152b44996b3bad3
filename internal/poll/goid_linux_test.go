//go:build linux && !iwarp_portable

package poll

import "testing"

// goroutineID tells goroutines apart and is stable within one.
func TestGoroutineID(t *testing.T) {
	id := goroutineID()
	if id == 0 || goroutineID() != id {
		t.Fatalf("goroutineID() = %d, then %d", id, goroutineID())
	}
	other := make(chan uint64)
	go func() { other <- goroutineID() }()
	if o := <-other; o == 0 || o == id {
		t.Fatalf("another goroutine's id %d, this one's %d", o, id)
	}
}
