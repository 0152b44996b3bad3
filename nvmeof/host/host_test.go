package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/leakcheck"
	"github.com/goiwarp/iwarp/internal/nvme"
)

func TestMain(m *testing.M) {
	os.Exit(leakcheck.Check(m.Run(), "nvmeof/host.", "iwarp.(*QP)"))
}

// testCtx bounds a test's blocking calls.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connectFake connects to a fake target's subsystem.
func connectFake(t *testing.T, ft *fakeTarget, cfg *Config) *Controller {
	t.Helper()
	c, err := Connect(testCtx(t), ft.addr, fakeNQN, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// openFake connects to a fake target's subsystem and identifies namespace 1.
func openFake(t *testing.T, ft *fakeTarget, cfg *Config) (*Controller, *Namespace) {
	t.Helper()
	c := connectFake(t, ft, cfg)
	ns, err := c.Namespace(testCtx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	return c, ns
}

// holdReads makes the fake target hold the reads whose first block match
// says (every read for nil) until release is closed, or drop them when it
// is nil; each read held sends a value on the returned channel (of
// capacity n).
func holdReads(ft *fakeTarget, n int, match func(lba int64) bool, release <-chan struct{}) <-chan struct{} {
	arrived := make(chan struct{}, n)
	ft.setHook(func(qid uint16, cmd nvme.Command) fault {
		lba := readLBA(qid, cmd)
		if lba < 0 || (match != nil && !match(lba)) {
			return fault{}
		}
		arrived <- struct{}{}
		if release == nil {
			return fault{drop: true}
		}
		return fault{wait: release}
	})
	return arrived
}

// pattern fills p with bytes that differ per block and per seed.
func pattern(p []byte, seed byte) {
	for i := range p {
		p[i] = byte(i/512)*7 + byte(i) + seed
	}
}

func TestConnectIdentifyReadWrite(t *testing.T) {
	ft := newFakeTarget(t, 4096)
	c := connectFake(t, ft, &Config{IOQueues: 2})
	ctx := testCtx(t)
	in := c.Info()
	if in.ModelNumber != "fake controller" || in.SerialNumber != "fake-serial" || in.FirmwareRevision != "1.0" ||
		in.Version != "1.3" || in.Namespaces != 1 || in.MaxDataTransfer != 128<<10 || in.IOQueues != 2 ||
		in.QueueSize != DefaultQueueSize || in.InCapsuleData != 4096 || in.ControllerID != 1 {
		t.Fatalf("info %+v", in)
	}
	ids, err := c.ActiveNamespaces(ctx)
	if err != nil || len(ids) != 1 || ids[0] != 1 {
		t.Fatalf("active namespaces %v, %v", ids, err)
	}
	ns, err := c.Namespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ns.BlockSize() != 512 || ns.Blocks() != 4096 {
		t.Fatalf("namespace %+v", ns.Info())
	}
	for _, size := range []int{512, 4096, 8192, 128 << 10, 1 << 20} {
		w, r := make([]byte, size), make([]byte, size)
		pattern(w, byte(size>>9))
		if err := ns.WriteAt(ctx, w, 100); err != nil {
			t.Fatalf("write %d: %v", size, err)
		}
		if err := ns.ReadAt(ctx, r, 100); err != nil {
			t.Fatalf("read %d: %v", size, err)
		}
		if !bytes.Equal(w, r) {
			t.Fatalf("%d bytes read back differ", size)
		}
	}
	ft.mu.Lock()
	inCap := ft.inCap
	ft.mu.Unlock()
	if inCap < 2 {
		t.Fatalf("%d writes sent in the capsule, want the 512- and 4096-byte ones", inCap)
	}
	if err := ns.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ns.WriteZeroes(ctx, 100, 8); err != nil {
		t.Fatal(err)
	}
	r := make([]byte, 4096)
	if err := ns.ReadAt(ctx, r, 100); err != nil || !bytes.Equal(r, make([]byte, 4096)) {
		t.Fatalf("after Write Zeroes: %v, zero %v", err, bytes.Equal(r, make([]byte, 4096)))
	}
	if err := ns.ReadAt(ctx, make([]byte, 1024), 4095); !errors.Is(err, ErrRange) {
		t.Fatalf("read past the end: %v", err)
	}
	if err := ns.ReadAt(ctx, make([]byte, 100), 0); !errors.Is(err, ErrRange) {
		t.Fatalf("read of a partial block: %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ft.mu.Lock()
	csts := ft.csts
	ft.mu.Unlock()
	if csts.SHST != nvme.SHSTComplete {
		t.Fatalf("CSTS %+v after Close: no normal shutdown", csts)
	}
	if err := ns.ReadAt(ctx, r, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if err := c.Close(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestConcurrentIO(t *testing.T) {
	ft := newFakeTarget(t, 1<<14)
	c := connectFake(t, ft, &Config{IOQueues: 3, QueueSize: 8})
	ctx := testCtx(t)
	ns, err := c.Namespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 16, 20
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			w0, r := make([]byte, 8192), make([]byte, 8192)
			lba := uint64(w * 16)
			for i := range rounds {
				pattern(w0, byte(w*rounds+i))
				if err := ns.WriteAt(ctx, w0, lba); err != nil {
					errc <- err
					return
				}
				if err := ns.ReadAt(ctx, r, lba); err != nil {
					errc <- err
					return
				}
				if !bytes.Equal(w0, r) {
					errc <- fmt.Errorf("worker %d round %d: data differ", w, i)
					return
				}
			}
			errc <- nil
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}
