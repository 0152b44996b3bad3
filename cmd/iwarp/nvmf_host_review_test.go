package main

import "testing"

// TestNvmfHostReviewParseSizeOverflow: a -bs whose count times its suffix
// overflows an int is refused, not wrapped round to a size in range
// ((2^44+1) MiB wrapped to 1 MiB).
func TestNvmfHostReviewParseSizeOverflow(t *testing.T) {
	for _, in := range []string{"17592186044417m", "18014398509481985k", "9223372036854775807k"} {
		if n, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, n)
		}
	}
}

// TestNvmfHostReviewNamespaceSizeOverflow: the namespace's size in bytes
// (blocks times block size) is printed without wrapping round 2^64.
func TestNvmfHostReviewNamespaceSizeOverflow(t *testing.T) {
	// 2^55 blocks of 512 bytes: 2^64 bytes, 2^34 GiB.
	if got, want := binarySize(float64(uint64(1)<<55)*512), "17179869184.00 GiB"; got != want {
		t.Errorf("binarySize = %q, want %q", got, want)
	}
}
