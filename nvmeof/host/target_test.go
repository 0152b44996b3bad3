package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/goiwarp/iwarp/internal/nvmetest"
	"github.com/goiwarp/iwarp/nvmeof"
	"github.com/goiwarp/iwarp/nvmeof/target"
)

// The host against the project's own target (nvmeof/target) on loopback.

const realNQN = "nqn.2024-01.test:real"

// startTarget serves a target with backend b on loopback until the test
// ends; it returns the target and its address.
func startTarget(t *testing.T, b target.Backend, cfg *target.Config) (*target.Target, string) {
	t.Helper()
	if cfg == nil {
		cfg = &target.Config{}
	}
	cfg.NQN, cfg.Backend = realNQN, b
	return nvmetest.Serve(t, cfg)
}

// openReal connects to the target at addr and identifies namespace 1; the
// controller is closed when the test ends.
func openReal(t *testing.T, addr string, cfg *Config) (*Controller, *Namespace) {
	t.Helper()
	ctx := testCtx(t)
	c, err := Connect(ctx, addr, realNQN, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	ns, err := c.Namespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c, ns
}

func memBackend(t *testing.T, size int64) *target.MemoryBackend {
	t.Helper()
	b, err := target.NewMemoryBackend(size)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTargetEndToEnd(t *testing.T) {
	_, addr := startTarget(t, memBackend(t, 8<<20), nil)
	ctx := testCtx(t)
	c, err := Connect(ctx, addr, realNQN, &Config{IOQueues: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	in := c.Info()
	if in.SubsystemNQN != realNQN || in.IOQueues != 2 || in.Namespaces < 1 || in.Discovery {
		t.Fatalf("info %+v", in)
	}
	ns, err := c.Namespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ns.Blocks()*uint64(ns.BlockSize()) != 8<<20 {
		t.Fatalf("namespace %+v", ns.Info())
	}
	bs := ns.BlockSize()
	for _, size := range []int{bs, 4096, 8192, 64 << 10, 128 << 10, 1 << 20} {
		w, r := make([]byte, size), make([]byte, size)
		pattern(w, byte(size/bs))
		if err := ns.WriteAt(ctx, w, 16); err != nil {
			t.Fatalf("write %d: %v", size, err)
		}
		if err := ns.ReadAt(ctx, r, 16); err != nil {
			t.Fatalf("read %d: %v", size, err)
		}
		if !bytes.Equal(w, r) {
			t.Fatalf("%d bytes read back differ", size)
		}
	}
	if err := ns.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if in.WriteZeroes {
		if err := ns.WriteZeroes(ctx, 16, 8); err != nil {
			t.Fatal(err)
		}
		r := make([]byte, 8*bs)
		if err := ns.ReadAt(ctx, r, 16); err != nil || !bytes.Equal(r, make([]byte, len(r))) {
			t.Fatalf("after Write Zeroes: %v", err)
		}
	}
	// Past the end: the host refuses it itself; the target's own answer
	// to a bad LBA is checked on a read it cannot refuse.
	if err := ns.ReadAt(ctx, make([]byte, bs), ns.Blocks()); !errors.Is(err, ErrRange) {
		t.Fatalf("read past the end: %v", err)
	}
	ns2 := &Namespace{c: c, info: ns.Info()}
	ns2.info.Blocks += 8
	if err := ns2.ReadAt(ctx, make([]byte, bs), ns.Blocks()); !errors.Is(err, nvmeof.ErrLBAOutOfRange) {
		t.Fatalf("read past the end at the target: %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestTargetConcurrentQueues(t *testing.T) {
	_, addr := startTarget(t, memBackend(t, 16<<20), nil)
	ctx := testCtx(t)
	_, ns := openReal(t, addr, &Config{IOQueues: 4, QueueSize: 16})
	const workers, rounds = 24, 10
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			size := 4096 << (w % 4)
			wb, rb := make([]byte, size), make([]byte, size)
			lba := uint64(w) * 128
			for i := range rounds {
				pattern(wb, byte(w*rounds+i))
				if err := ns.WriteAt(ctx, wb, lba); err != nil {
					errc <- err
					return
				}
				if err := ns.ReadAt(ctx, rb, lba); err != nil {
					errc <- err
					return
				}
				if !bytes.Equal(wb, rb) {
					errc <- fmt.Errorf("worker %d round %d: data differ", w, i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

func TestTargetDiscovery(t *testing.T) {
	_, addr := startTarget(t, memBackend(t, 1<<20), nil)
	ctx := testCtx(t)
	c, err := Connect(ctx, addr, nvmeof.DiscoveryNQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	log, err := c.DiscoveryLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range log {
		if e.SubsystemNQN == realNQN && e.TransportType == "rdma" && e.SubsystemType == "nvm" {
			found = true
		}
	}
	if !found {
		t.Fatalf("discovery log without %s: %+v", realNQN, log)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// gatedBackend is a memory backend whose reads wait for a gate, so that
// the test can hold commands at the target.
type gatedBackend struct {
	*target.MemoryBackend
	arrived chan struct{}
	gate    chan struct{}
}

func (g *gatedBackend) ReadAt(p []byte, off int64) (int, error) {
	g.arrived <- struct{}{}
	<-g.gate
	return g.MemoryBackend.ReadAt(p, off)
}

func TestTargetCloseMidTransfer(t *testing.T) {
	const n = 4
	g := &gatedBackend{MemoryBackend: memBackend(t, 1<<20), arrived: make(chan struct{}, n), gate: make(chan struct{})}
	tg, addr := startTarget(t, g, nil)
	ctx := testCtx(t)
	c, ns := openReal(t, addr, &Config{IOQueues: 2})
	errc := make(chan error, n)
	for i := range n {
		go func() { errc <- ns.ReadAt(ctx, make([]byte, 4096), uint64(i*8)) }()
	}
	<-g.arrived // at least one read is at the backend
	closed := make(chan error, 1)
	go func() { closed <- tg.Close() }()
	for range n {
		if err := <-errc; !errors.Is(err, ErrFailed) {
			t.Fatalf("read outstanding when the target died: %v", err)
		}
	}
	close(g.gate) // let the target's goroutines finish
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close after the failure: %v", err)
	}
}
