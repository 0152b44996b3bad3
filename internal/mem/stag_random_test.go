package mem

import (
	"context"
	"math"
	"testing"
)

// TestSTagUnpredictability: STags drawn over many registrations (with
// deregistrations in between) use random 24-bit indices and random 8-bit
// keys: every one of the 32 bits is set in about half of them, indices
// and whole STags almost never repeat, index 0 never appears, and a freed
// index is not handed out again while quarantined.
func TestSTagUnpredictability(t *testing.T) {
	tab := NewTable(TableOptions{})
	const n = 20000
	var ones [32]int
	seen := make(map[STag]bool, n)
	indices := make(map[uint32]int, n)
	freed := make(map[uint32]bool)
	var live []*Region
	buf := make([]byte, 8)
	for i := 0; i < n; i++ {
		r, err := tab.Register(1, buf, AccessRemoteRead, 0)
		if err != nil {
			t.Fatal(err)
		}
		s := r.STag()
		if s.Index() == 0 {
			t.Fatal("index 0 handed out")
		}
		if freed[s.Index()] {
			t.Fatalf("index %#x reused within the quarantine window", s.Index())
		}
		seen[s] = true
		indices[s.Index()]++
		for b := 0; b < 32; b++ {
			if uint32(s)>>b&1 == 1 {
				ones[b]++
			}
		}
		live = append(live, r)
		if len(live) == 100 { // free a batch: their indices are quarantined
			for _, r := range live {
				freed[r.STag().Index()] = true
				if err := tab.Deregister(context.Background(), r); err != nil {
					t.Fatal(err)
				}
			}
			live = live[:0]
		}
	}
	// Each bit is a fair coin: within 5 standard deviations of n/2.
	sd := math.Sqrt(n) / 2
	for b, c := range ones {
		if math.Abs(float64(c)-n/2) > 5*sd {
			t.Errorf("STag bit %d set in %d of %d registrations", b, c, n)
		}
	}
	// With 2^24 indices and 20,000 draws, repeats are impossible within the
	// quarantine; whole STags must all differ.
	if len(seen) != n {
		t.Errorf("%d distinct STags out of %d", len(seen), n)
	}
	if len(indices) != n {
		t.Errorf("%d distinct indices out of %d", len(indices), n)
	}
}
