package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"testing"
)

func want(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }

// TestAgainstStdlib compares Update with hash/crc32 for every length up to
// 4 KiB and beyond, at every alignment of a 16-octet window, from random
// and extreme starting CRCs: the folded path and the fallback agree.
func TestAgainstStdlib(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 70000)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	lens := []int{0, 1, 3, 4, 15, 16, 127, 128, 129, 255, 256, 511, 512, 513, 640, 1023, 1024, 4096, 65536, 65483, 69999 - 16}
	for n := range 4096 + 300 {
		lens = append(lens, n)
	}
	for _, n := range lens {
		for _, off := range []int{0, 1, 7, 15} {
			p := buf[off : off+n]
			for _, crc := range []uint32{0, ^uint32(0), 0x12345678, rng.Uint32()} {
				if got, w := Update(crc, p), want(crc, p); got != w {
					t.Fatalf("Update(%#x, %d octets at +%d) = %#x, hash/crc32 %#x", crc, n, off, got, w)
				}
			}
		}
	}
}

// TestKnownAnswers checks the RFC 3720 §B.4 CRC32c examples (32 octets of
// zeros, of ones, ascending) and a long input of each.
func TestKnownAnswers(t *testing.T) {
	zeros, ones, asc := make([]byte, 32), make([]byte, 32), make([]byte, 32)
	for i := range ones {
		ones[i], asc[i] = 0xff, byte(i)
	}
	for _, c := range []struct {
		p    []byte
		want uint32
	}{{zeros, 0x8a9136aa}, {ones, 0x62a8ab43}, {asc, 0x46dd794e}} {
		if got := Checksum(c.p); got != c.want {
			t.Errorf("Checksum(% x) = %#x, want %#x", c.p[:4], got, c.want)
		}
	}
	long := make([]byte, 1<<20)
	for i := range long {
		long[i] = byte(i * 7)
	}
	if got, w := Checksum(long), want(0, long); got != w {
		t.Errorf("1 MiB: %#x, hash/crc32 %#x", got, w)
	}
}

// TestChained splits inputs at random points: the chain of updates is the
// CRC of the whole.
func TestChained(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 200000)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for range 500 {
		n := rng.IntN(len(buf))
		p := buf[:n]
		crc := uint32(0)
		for len(p) > 0 {
			k := min(len(p), rng.IntN(5000))
			crc = Update(crc, p[:k])
			p = p[k:]
		}
		if w := want(0, buf[:n]); crc != w {
			t.Fatalf("chained over %d octets: %#x, want %#x", n, crc, w)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	p := make([]byte, 65536)
	if a := testing.AllocsPerRun(100, func() { Update(1, p) }); a != 0 {
		t.Errorf("%v allocations per Update", a)
	}
}

// FuzzAgainstStdlib is the differential fuzz target: any input, any
// starting CRC, any split.
func FuzzAgainstStdlib(f *testing.F) {
	f.Add(uint32(0), make([]byte, 1000), 0)
	f.Add(uint32(0xdeadbeef), make([]byte, 4096), 100)
	f.Fuzz(func(t *testing.T, crc uint32, p []byte, split int) {
		if got, w := Update(crc, p), want(crc, p); got != w {
			t.Fatalf("Update = %#x, hash/crc32 %#x", got, w)
		}
		if split < 0 || split > len(p) {
			return
		}
		if got, w := Update(Update(crc, p[:split]), p[split:]), want(crc, p); got != w {
			t.Fatalf("split at %d: %#x, want %#x", split, got, w)
		}
	})
}

func benchmark(b *testing.B, n int, f func(uint32, []byte) uint32) {
	p := make([]byte, n)
	b.SetBytes(int64(n))
	for b.Loop() {
		f(0, p)
	}
}

func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{512, 1024, 2048, 4096, 16384, 65536, 1 << 20} {
		b.Run("fold/"+itoa(n), func(b *testing.B) { benchmark(b, n, Update) })
		b.Run("stdlib/"+itoa(n), func(b *testing.B) { benchmark(b, n, want) })
	}
}

func itoa(n int) string {
	if n >= 1024 {
		return strconv.Itoa(n/1024) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
