package host

import (
	"testing"
)

// TestIOAllocs checks the I/O path allocates nothing per read or write
// once the slots' buffers exist (the race detector's instrumentation
// allocates, so it counts only without it).
func TestIOAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are counted without the race detector")
	}
	ft := newFakeTarget(t, 4096)
	c := connectFake(t, ft, &Config{IOQueues: 1, QueueSize: 64})
	ctx := testCtx(t)
	ns, err := c.Namespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 2048) // in-capsule data the QP copies at posting
	for _, tc := range []struct {
		name string
		f    func() error
	}{
		{"read", func() error { return ns.ReadAt(ctx, p, 8) }},
		{"write", func() error { return ns.WriteAt(ctx, p, 8) }},
		{"read-4k", func() error { return ns.ReadAt(ctx, make8k[:4096], 16) }},
		{"write-keyed", func() error { return ns.WriteAt(ctx, make8k, 16) }},
	} {
		for range 128 { // every slot's buffer registered (slots are taken in turn)
			if err := tc.f(); err != nil {
				t.Fatal(err)
			}
		}
		var ferr error
		allocs := testing.AllocsPerRun(200, func() {
			if err := tc.f(); err != nil {
				ferr = err
			}
		})
		if ferr != nil {
			t.Fatal(ferr)
		}
		if allocs > 0 {
			t.Errorf("%s: %.2f allocations per I/O, want 0", tc.name, allocs)
		}
	}
}

// make8k is a write too large for the fake target's in-capsule data.
var make8k = make([]byte, 8192)
