package host

import (
	"context"
	"testing"

	"github.com/goiwarp/iwarp"
)

// The host copies data through per-slot registered buffers instead of
// registering the caller's memory for each command (docs/nvmeof.md,
// "Commands and memory"). These benchmarks back that choice: a
// registration and its deregistration against the copy of a 4 KiB block.

func BenchmarkRegisterDeregister4K(b *testing.B) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4096)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		mr, err := pd.RegisterMemory(buf, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite)
		if err != nil {
			b.Fatal(err)
		}
		if err := mr.Deregister(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCopy4K(b *testing.B) {
	src, dst := make([]byte, 4096), make([]byte, 4096)
	b.SetBytes(4096)
	b.ReportAllocs()
	for b.Loop() {
		copy(dst, src)
	}
}
