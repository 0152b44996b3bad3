package fpdu

import (
	"fmt"
	"testing"
)

// TestCRC32c checks the check value of CRC-32C and the trailer example of
// docs/spec/mpa.md §2, and that updates chain.
func TestCRC32c(t *testing.T) {
	if got := CRC32c([]byte("123456789")); got != 0xE3069283 {
		t.Errorf("check value %08x", got)
	}
	if got := CRC32c(make([]byte, 32)); got != 0x8A9136AA {
		t.Errorf("32 zero octets: %08x", got)
	}
	b := []byte("hello, iWARP! 0123456789")
	for i := range len(b) {
		if got := UpdateCRC32c(UpdateCRC32c(0, b[:i]), b[i:]); got != CRC32c(b) {
			t.Fatalf("split at %d: %08x", i, got)
		}
	}
}

func BenchmarkCRC32c(b *testing.B) {
	for _, n := range []int{16, 1456, 65530} {
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			buf := make([]byte, n)
			b.SetBytes(int64(n))
			for b.Loop() {
				CRC32c(buf)
			}
		})
	}
}
