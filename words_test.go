package iwarp_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/goiwarp/iwarp"
)

// TestRegisterWords: the words are 8-byte aligned, registered with the
// rights asked for, and alias the region's bytes both ways: what the MR's
// atomic accessors (and so the peers' atomics) do shows in the words, and
// what sync/atomic does to a word shows through the MR.
func TestRegisterWords(t *testing.T) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 1000} {
		access := iwarp.AccessRemoteAtomic | iwarp.AccessRemoteRead
		mr, words, err := pd.RegisterWords(n, access)
		if err != nil {
			t.Fatalf("%d words: %v", n, err)
		}
		b := mr.Bytes()
		if len(words) != n || len(b) != 8*n || mr.Len() != 8*n || mr.Remote().Len != uint32(8*n) {
			t.Fatalf("%d words: %d words, %d bytes, MR of %d", n, len(words), len(b), mr.Len())
		}
		if uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
			t.Fatalf("%d words: buffer at %p is not 8-byte aligned", n, &b[0])
		}
		if unsafe.Pointer(&b[0]) != unsafe.Pointer(&words[0]) {
			t.Fatalf("%d words: the words do not alias the region", n)
		}
		if mr.Access() != access {
			t.Fatalf("%d words: access %v, want %v", n, mr.Access(), access)
		}
		for i := range words {
			if _, err := mr.AtomicAdd(8*i, uint64(i)+1); err != nil {
				t.Fatalf("AtomicAdd on word %d: %v", i, err)
			}
		}
		for i := range words {
			if v := atomic.LoadUint64(&words[i]); v != uint64(i)+1 {
				t.Fatalf("word %d is %d after AtomicAdd, want %d", i, v, i+1)
			}
			atomic.StoreUint64(&words[i], 100+uint64(i))
			if v, err := mr.AtomicLoad(8 * i); err != nil || v != 100+uint64(i) {
				t.Fatalf("AtomicLoad of word %d: %d, %v; want %d", i, v, err, 100+i)
			}
		}
		if old, err := mr.AtomicCompareAndSwap(8*(n-1), 100+uint64(n-1), 7); err != nil || old != 100+uint64(n-1) {
			t.Fatalf("AtomicCompareAndSwap: %d, %v", old, err)
		}
		if v := atomic.LoadUint64(&words[n-1]); v != 7 {
			t.Fatalf("last word %d after AtomicCompareAndSwap, want 7", v)
		}
		if err := mr.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRegisterWordsInvalid: a count below one is refused.
func TestRegisterWordsInvalid(t *testing.T) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, _ := dev.AllocPD()
	for _, n := range []int{0, -1} {
		if mr, words, err := pd.RegisterWords(n, iwarp.AccessRemoteAtomic); !errors.Is(err, iwarp.ErrInvalidBuffer) || mr != nil || words != nil {
			t.Errorf("RegisterWords(%d): %v, %v, %v; want ErrInvalidBuffer", n, mr, words, err)
		}
	}
}
