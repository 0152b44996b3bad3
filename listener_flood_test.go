package iwarp_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestListenerFlood puts a Listener with its default limits under the
// floods of issue 22, over loopback TCP, and checks what docs/security.md
// ("Connection setup under attack") promises. Each flood is bounded in
// count (at most 2,000 connections) and time (a few seconds, also under
// the race detector on two cores).
func TestListenerFlood(t *testing.T) {
	t.Run("silent-reopened", testFloodSilent)
	t.Run("RTRs-late", testFloodLateRTR)
	t.Run("Requests-without-RTR", testFloodNoRTR)
}

// floodServer is a Listener on loopback whose every request an acceptor
// accepts; all is closed when the test ends.
func floodServer(t *testing.T, cfg *iwarp.ListenConfig) (*iwarp.Listener, *acceptor, context.Context) {
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := newAcceptor(t)
	a.serve(ctx, ln, nil)
	t.Cleanup(func() { ln.Close(); cancel(); a.close() })
	return ln, a, ctx
}

// cleanConnect connects a new QP to addr as a well-behaved client and
// returns how long it took; the QP is closed when the test ends.
func cleanConnect(t *testing.T, ctx context.Context, addr string) (time.Duration, error) {
	ep := newEndpoint(t)
	t.Cleanup(func() { ep.qp.Close() })
	start := time.Now()
	err := ep.qp.Connect(ctx, "tcp", addr, &iwarp.ConnOptions{Timeout: 10 * time.Second})
	return time.Since(start), err
}

// testFloodSilent: 256 connections that send nothing, each reopened as
// soon as the server closes it, do not keep a clean client out: it
// connects within 1 s, five times in a row.
func testFloodSilent(t *testing.T) {
	const attackers, cleanClients = 256, 5
	ln, _, ctx := floodServer(t, nil)
	addr := ln.Addr().String()
	f := startSilentFlood(t, addr, attackers)
	defer f.stop()
	start, before := time.Now(), f.reopened.Load()
	checkCleanClients(t, ctx, addr, cleanClients)
	n, el := f.reopened.Load()-before, time.Since(start)
	t.Logf("%d clean connections in %v with %d silent connections open; the server closed %d of them meanwhile", cleanClients, el, attackers, n)
}

// testFloodLateRTR: 1,000 clients that send their Requests at once and
// their RTRs only once all of them are waiting get no more than
// MaxConnections (100) QPs into StateRTS, and the Listener counts exactly
// its QPs in the end. MaxPending is out of the way (1,000), so that
// MaxConnections is the bound that holds.
func testFloodLateRTR(t *testing.T) {
	const clients, maxConns = 1000, 100
	ln, a, ctx := floodServer(t, &iwarp.ListenConfig{MaxConnections: maxConns, MaxPending: clients, StartupTimeout: time.Minute})
	lateRTRs(t, ctx, ln.Addr().String(), clients, func() {
		if open, _ := iwarp.ListenerCounts(ln); open > maxConns {
			t.Errorf("the Listener counts %d connections with their RTRs held, MaxConnections %d", open, maxConns)
		}
	})
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	settled := func() bool {
		_, startups := iwarp.ListenerCounts(ln)
		return startups == 0 && a.inAccept.Load() == 0
	}
	if !a.waitFor(wctx, settled) {
		_, startups := iwarp.ListenerCounts(ln)
		t.Errorf("still %d connections in startup, %d Accept calls in progress", startups, a.inAccept.Load())
	}
	if m := a.maxLive.Load(); m > maxConns || m == 0 {
		t.Errorf("%d connections reached RTS with MaxConnections %d", m, maxConns)
	}
	if open, _ := iwarp.ListenerCounts(ln); int64(open) != a.live.Load() {
		t.Errorf("the Listener counts %d connections, %d QPs are in RTS", open, a.live.Load())
	}
	t.Logf("%d clients: %d server QPs in RTS, %d Accept calls failed", clients, a.live.Load(), a.failures.Load())
}

// Bounds of testFloodNoRTR, stated in docs/security.md: what 2,000
// connections that send a Request and never an RTR may cost the process
// (the test's own 2,000 client sockets included) beyond its baseline.
const (
	floodGoroutines = 8 * 64   // MaxPending's startup and Accept goroutines, with room for those ending
	floodHeap       = 16 << 20 // live heap
)

// testFloodNoRTR: 2,000 connections that send a Request and then nothing,
// answered by an application that calls Accept for each, keep the
// process's goroutines and live heap within floodGoroutines and floodHeap
// of its baseline, during the flood and after it.
func testFloodNoRTR(t *testing.T) {
	const clients = 2000
	ln, _, ctx := floodServer(t, nil)
	addr := ln.Addr().String()
	if d, err := cleanConnect(t, ctx, addr); err != nil { // warm-up
		t.Fatalf("clean client: %v after %v", err, d)
	}
	runtime.GC()
	runtime.GC() // and what finalizers of earlier tests freed
	baseG, baseHeap := runtime.NumGoroutine(), liveHeap()

	stop := make(chan struct{})
	sampled := make(chan [2]int64)
	go func() { sampled <- samplePeaks(stop) }()
	stopSampling := sync.OnceValue(func() [2]int64 { close(stop); return <-sampled })
	defer stopSampling()
	defer closeConns(requestsWithoutRTR(t, addr, clients))
	// Accepted after all the others: when it is served, the Listener has
	// taken every one of them.
	if d, err := cleanConnect(t, ctx, addr); err != nil {
		t.Fatalf("clean client after the flood: %v after %v", err, d)
	}
	peaks := stopSampling()
	runtime.GC()
	g, heap := runtime.NumGoroutine(), liveHeap()
	_, startups := iwarp.ListenerCounts(ln)
	t.Logf("baseline %d goroutines, %d KiB heap; during the flood at most %+d goroutines, %+d KiB; after it %+d, %+d KiB, %d connections in startup",
		baseG, baseHeap>>10, peaks[0]-int64(baseG), (peaks[1]-baseHeap)>>10, g-baseG, (heap-baseHeap)>>10, startups)
	if peaks[0]-int64(baseG) > floodGoroutines || g-baseG > floodGoroutines {
		t.Errorf("goroutines: baseline %d, at most %d during the flood, %d after it; bound +%d", baseG, peaks[0], g, floodGoroutines)
	}
	if peaks[1]-baseHeap > floodHeap || heap-baseHeap > floodHeap {
		t.Errorf("live heap: baseline %d KiB, at most %d KiB during the flood, %d KiB after it; bound +%d KiB",
			baseHeap>>10, peaks[1]>>10, heap>>10, floodHeap>>10)
	}
}

// liveHeap returns the bytes of heap objects, live or not yet collected:
// right after runtime.GC, the live heap.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// samplePeaks samples the goroutine count and the live heap every
// millisecond until stop is closed, and returns the largest of each.
func samplePeaks(stop <-chan struct{}) (peaks [2]int64) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		peaks[0] = max(peaks[0], int64(runtime.NumGoroutine()))
		peaks[1] = max(peaks[1], liveHeap())
		select {
		case <-stop:
			return peaks
		case <-tick.C:
		}
	}
}
