package mem

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/goiwarp/iwarp/internal/vectors"
)

// rfcFetchAdd is a literal transcription of the pseudo-code of RFC 7306
// §5.1.1 (seed 003), bit by bit, as the oracle for FetchAddMasked.
func rfcFetchAdd(original, addData, addMask uint64) uint64 {
	bitLocation := uint64(1)
	carry := uint64(0)
	remote := uint64(0)
	for bit := 0; bit < 64; bit++ {
		if bit != 0 {
			bitLocation <<= 1
		}
		val1 := (original & bitLocation) >> bit
		val2 := (addData & bitLocation) >> bit
		sum := carry + val1 + val2
		carry = (sum & 2) >> 1
		sum &= 1
		if sum != 0 {
			remote |= bitLocation
		}
		if carry != 0 && addMask&bitLocation == 0 {
			carry = 1
		} else {
			carry = 0
		}
	}
	return remote
}

// rfcCmpSwap is a literal transcription of RFC 7306 §5.1.2's pseudo-code.
func rfcCmpSwap(original, swapData, swapMask, compareData, compareMask uint64) uint64 {
	if (compareData^original)&compareMask == 0 {
		return original&^swapMask | swapData&swapMask
	}
	return original
}

// TestAtomicsVectors runs every row of internal/vectors/testdata/atomics.tsv through
// the masked operations and the RFC transcription.
func TestAtomicsVectors(t *testing.T) {
	rows, err := vectors.ReadAtomics("../vectors/testdata/" + vectors.AtomicsFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 90 {
		t.Fatalf("only %d vector rows read", len(rows))
	}
	for _, v := range rows {
		orig, data, mask, cmp, cmpMask, want := v.Original, v.Data, v.Mask, v.Compare, v.CompareMask, v.Result
		var got, oracle uint64
		if v.Op == "fetchadd" {
			got, oracle = FetchAddMasked(orig, data, mask), rfcFetchAdd(orig, data, mask)
		} else {
			got, oracle = CmpSwapMasked(orig, cmp, cmpMask, data, mask), rfcCmpSwap(orig, data, mask, cmp, cmpMask)
		}
		if got != want || oracle != want {
			t.Errorf("%+v: got %016x, RFC transcription %016x", v, got, oracle)
		}
		// And through a registered region, as a remote atomic runs.
		buf := make([]uint64, 1)
		tab := NewTable(TableOptions{})
		r, err := tab.Register(1, u64bytes(buf), AccessRemoteAtomic, 0x1000)
		if err != nil {
			t.Fatal(err)
		}
		buf[0] = orig
		var ret uint64
		if v.Op == "fetchadd" {
			ret = r.AtomicFetchAdd(0x1000, data, mask)
		} else {
			ret = r.AtomicCmpSwap(0x1000, cmp, cmpMask, data, mask)
		}
		if ret != orig || buf[0] != want {
			t.Errorf("%+v: region returned %016x holds %016x", v, ret, buf[0])
		}
	}
}

// TestMaskedOpsProperty compares the fast masked operations with the RFC's
// bit loop over millions of random inputs (fewer under -race or -short; CI
// also runs it without the race detector).
func TestMaskedOpsProperty(t *testing.T) {
	n := 2_000_000
	switch {
	case testing.Short():
		n = 20000
	case raceEnabled:
		n = 200000
	}
	rng := rand.New(rand.NewPCG(7306, 1))
	edge := []uint64{0, 1, ^uint64(0), 1 << 63, 0x8080808080808080, 0x8000000080000000}
	pick := func() uint64 {
		if rng.IntN(4) == 0 {
			return edge[rng.IntN(len(edge))]
		}
		return rng.Uint64()
	}
	for i := 0; i < n; i++ {
		v, a, m, c, cm := pick(), pick(), pick(), pick(), pick()
		if got, want := FetchAddMasked(v, a, m), rfcFetchAdd(v, a, m); got != want {
			t.Fatalf("FetchAddMasked(%x,%x,%x)=%x, RFC %x", v, a, m, got, want)
		}
		if got, want := CmpSwapMasked(v, c, cm, a, m), rfcCmpSwap(v, a, m, c, cm); got != want {
			t.Fatalf("CmpSwapMasked=%x, RFC %x", got, want)
		}
		if i%2 == 0 { // compare data equal under the mask: exercise the swap branch
			c = v ^ (rng.Uint64() &^ cm)
			if got, want := CmpSwapMasked(v, c, cm, a, m), rfcCmpSwap(v, a, m, c, cm); got != want {
				t.Fatalf("CmpSwapMasked (match)=%x, RFC %x", got, want)
			}
		}
	}
}

func TestMaskedEdgeCases(t *testing.T) {
	// Add Mask all ones: every bit its own field, no carries: xor.
	if got := FetchAddMasked(0x0f0f, 0x0101, ^uint64(0)); got != 0x0e0e {
		t.Errorf("all-ones add mask: %x", got)
	}
	// Add Mask 1<<63 is the plain add (carry out of bit 63 is lost anyway).
	if got := FetchAddMasked(^uint64(0), 1, 1<<63); got != 0 {
		t.Errorf("mask 1<<63: %x", got)
	}
	// Add Mask 1: bit 0 is a field of its own, the rest another.
	if got := FetchAddMasked(1, 1, 1); got != 0 {
		t.Errorf("mask 1: %x", got)
	}
	// Compare Mask 0 always swaps; Swap Mask 0 never changes memory.
	if got := CmpSwapMasked(5, 6, 0, 9, ^uint64(0)); got != 9 {
		t.Errorf("compare mask 0: %x", got)
	}
	if got := CmpSwapMasked(5, 5, ^uint64(0), 9, 0); got != 5 {
		t.Errorf("swap mask 0: %x", got)
	}
}

// TestAtomicsConcurrent: many goroutines doing FetchAdd (plain and masked)
// and CmpSwap on one word end exactly at the sum: no lost update.
func TestAtomicsConcurrent(t *testing.T) {
	buf := make([]uint64, 2)
	tab := NewTable(TableOptions{})
	r, err := tab.Register(1, u64bytes(buf), AccessRemoteAtomic, 0)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 5000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				switch i % 3 {
				case 0:
					r.AtomicFetchAdd(0, 1, 0)
				case 1:
					r.AtomicFetchAdd(0, 1, 1<<63) // masked path, same result
				default:
					for {
						v := r.AtomicLoad(0)
						if r.AtomicCmpSwap(0, v, ^uint64(0), v+1, ^uint64(0)) == v {
							break
						}
					}
				}
			}
		}(w)
	}
	wg.Wait()
	if got := r.AtomicLoad(0); got != workers*each {
		t.Fatalf("counter %d, want %d", got, workers*each)
	}
}

func u64bytes(w []uint64) []byte {
	return unsafeBytes(w)
}
