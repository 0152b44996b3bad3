//go:build !amd64 || purego

package crc32c

const hasFold = false

func fold(state uint32, p *byte, n int, k *[10]uint64) uint32 {
	panic("crc32c: no folding on this platform")
}

func hybrid(state uint32, p *byte, iters int, k *[10]uint64, shift *[4]uint32) uint32 {
	panic("crc32c: no folding on this platform")
}
