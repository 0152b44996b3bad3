package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp/nvmeof/host"
)

// nvmfLoadKinds are -rw's values: whether they write, and whether their
// offsets are random.
var nvmfLoadKinds = map[string]struct{ write, random bool }{
	"read": {false, false}, "write": {true, false}, "randread": {false, true}, "randwrite": {true, true},
}

// loadResult is what one goroutine of the load did.
type loadResult struct {
	ios uint64
	lat []time.Duration
	err error
}

// runLoad runs -rw for -d with -qd goroutines, each with one I/O in flight
// (the controller spreads their commands over its I/O queues), and prints
// a fio-style summary.
func (f *nvmfHostFlags) runLoad(ctx context.Context, c *host.Controller, ns *host.Namespace) int {
	kind := nvmfLoadKinds[f.rw]
	bs := ns.BlockSize()
	if f.bsBytes%bs != 0 {
		return f.badFlag("bs", f.bs, "not a multiple of the namespace's %d-byte blocks", bs)
	}
	per := uint64(f.bsBytes / bs) // blocks per I/O
	span := ns.Blocks() / per     // I/O-sized extents in the namespace
	if span == 0 {
		return f.fail("-bs %s: larger than the namespace", f.bs)
	}
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return f.fail("-cpuprofile: %v", err)
		}
		defer stop()
	}
	ctx, cancel := context.WithTimeout(ctx, f.dur)
	defer cancel()
	var next atomic.Uint64 // the next sequential extent
	results := make([]loadResult, f.qd)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range f.qd {
		wg.Go(func() {
			results[g] = loadWorker(ctx, ns, kind.write, kind.random, f.bsBytes, per, span, &next, uint64(g))
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	var ios uint64
	for _, r := range results {
		if r.err != nil {
			return f.fail("%s: %v", f.rw, r.err)
		}
		ios += r.ios
		all = append(all, r.lat...)
	}
	if ios == 0 {
		return f.fail("%s: no I/O completed in %v", f.rw, f.dur)
	}
	op := "read"
	if kind.write {
		op = "write"
	}
	in := c.Info()
	fmt.Fprintf(f.stdout, "%s: bs=%s, qd=%d, %d I/O queues of %d entries\n", f.rw, f.bs, f.qd, in.IOQueues, in.QueueSize)
	printLoad(f.stdout, op, ios, uint64(f.bsBytes), elapsed, all)
	return exitOK
}

// loadWorker issues I/Os one after another until ctx ends.
func loadWorker(ctx context.Context, ns *host.Namespace, write, random bool, size int, per, span uint64,
	next *atomic.Uint64, seed uint64) loadResult {
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i) ^ byte(seed)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	r := loadResult{lat: make([]time.Duration, 0, 1<<14)}
	for ctx.Err() == nil {
		var ext uint64
		if random {
			ext = rng.Uint64N(span)
		} else {
			ext = (next.Add(1) - 1) % span
		}
		t0 := time.Now()
		var err error
		if write {
			err = ns.WriteAt(ctx, buf, ext*per)
		} else {
			err = ns.ReadAt(ctx, buf, ext*per)
		}
		if err != nil {
			if ctx.Err() != nil {
				break // the run's end caught this I/O in flight
			}
			r.err = err
			break
		}
		r.ios++
		r.lat = append(r.lat, time.Since(t0))
	}
	return r
}

// printLoad prints fio's summary line and the latencies.
func printLoad(w io.Writer, op string, ios, size uint64, elapsed time.Duration, lat []time.Duration) {
	secs := elapsed.Seconds()
	bytes := float64(ios * size)
	fmt.Fprintf(w, "%s: IOPS=%s, BW=%.1fMiB/s (%.1fMB/s)(%s/%dmsec)\n", op, siCount(float64(ios)/secs),
		bytes/secs/(1<<20), bytes/secs/1e6, fioBytes(ios*size), elapsed.Milliseconds())
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e3 }
	fmt.Fprintf(w, "    lat (usec): min=%.1f, max=%.1f, avg=%.1f, p50=%.1f, p99=%.1f, p99.9=%.1f\n",
		float64(lat[0])/1e3, float64(lat[len(lat)-1])/1e3, float64(sum)/float64(len(lat))/1e3,
		pct(0.5), pct(0.99), pct(0.999))
}

// siCount formats a rate as fio does: 950, 12.3k, 1.2M.
func siCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// fioBytes formats a byte total as fio's summary does: 481MiB, 2.5GiB.
func fioBytes(n uint64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%.0fGiB", float64(n)/(1<<30))
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.0fKiB", float64(n)/(1<<10))
}
