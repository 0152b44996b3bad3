package iwarp_test

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/leakcheck"
)

var loadFor = flag.Duration("iwarp.load", 0,
	"how long TestLoadManyQPsEveryByteVerifiedCountersExact runs its load (0: a few seconds, as in CI); give go test a -timeout above it")

var loadPairs = flag.Int("iwarp.loadqps", 0,
	"QP pairs of TestLoadManyQPsEveryByteVerifiedCountersExact (0: 1,000)")

// loadQPs is the number of QP pairs of the load test: 1,000 by default,
// also under the race detector (set-up takes under a second there; the
// detector's limit of 8128 live goroutines leaves room, at two per QP and
// one driver per pair).
func loadQPs() int {
	if *loadPairs > 0 {
		return *loadPairs
	}
	return 1000
}

// loadDuration is how long the drivers run after the set-up.
func loadDuration() time.Duration {
	if *loadFor > 0 {
		return *loadFor
	}
	return 3 * time.Second
}

// TestLoadManyQPsEveryByteVerifiedCountersExact: 1,000 QP pairs run every operation — Send, Write, Write with
// Immediate, Send with Immediate, Read, Read V2, FetchAdd, CompareSwap —
// for a sustained period (-iwarp.load), with CRC on and off and with
// markers. Every payload is checked byte for byte against a pattern of
// (QP, sequence, kind), every completion is a success, the FetchAdd
// counter shared by all QPs ends at exactly the number of FetchAdds (and
// the values returned are each value below it exactly once), the
// CompareSwap counter at exactly the number of successful increments, the
// canaries around every region are intact and no QP goroutine is left.
func TestLoadManyQPsEveryByteVerifiedCountersExact(t *testing.T) {
	if testing.Short() && *loadFor == 0 {
		t.Skip("-short: the load test runs in the full suite")
	}
	n, dur := loadQPs(), loadDuration()
	ctx, cancel := context.WithTimeout(context.Background(), dur+2*time.Minute)
	defer cancel()
	var (
		mu     sync.Mutex
		errs   []error
		failed atomic.Bool
	)
	fail := func(err error) {
		mu.Lock()
		if len(errs) < 10 {
			errs = append(errs, err)
		}
		mu.Unlock()
		failed.Store(true)
		cancel() // unblocks everyone waiting for a message that will not come
	}
	report := func() {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) > 0 {
			t.Fatal(errors.Join(errs...))
		}
	}

	start := time.Now()
	srv, err := newLoadServer(n, fail)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := iwarp.NewDevice(nil).AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	pairs := make([]*loadPair, n)
	for i := range pairs {
		if pairs[i], err = newLoadPair(pd, i, srv.qps[i]); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { closeLoad(t, srv, pairs) })
	created := time.Since(start)
	if err := connectLoad(ctx, srv, pairs); err != nil {
		t.Fatal(err)
	}
	setup := time.Since(start)
	t.Logf("%d QP pairs: created in %v, connected in %v (set-up %v)", n, created.Round(time.Millisecond), (setup - created).Round(time.Millisecond), setup.Round(time.Millisecond))

	pollCtx, stopPolling := context.WithCancel(ctx)
	waitPollers := srv.startPollers(pollCtx)
	words := srv.words.Remote()
	until := time.Now().Add(dur)
	var wg sync.WaitGroup
	for _, p := range pairs {
		wg.Go(func() {
			for seq := 0; time.Now().Before(until) && !failed.Load(); seq++ {
				if err := p.iteration(ctx, seq, words); err != nil {
					fail(fmt.Errorf("client QP %d seq %d: %w", p.idx, seq, err))
					return
				}
			}
		})
	}
	wg.Wait()
	loaded := time.Since(until.Add(-dur))
	stopPolling()
	waitPollers()
	report()

	checkLoadResults(t, srv, pairs, loaded)
	closing := time.Now()
	closeLoad(t, srv, pairs)
	t.Logf("closing every QP took %v", time.Since(closing).Round(time.Millisecond))
	for _, p := range pairs {
		if !p.lbuf.intact() {
			t.Errorf("client QP %d: canaries around its region overwritten", p.idx)
		}
	}
	for _, q := range srv.qps {
		if !q.sbuf.intact() || !q.rbuf.intact() {
			t.Errorf("server QP %d: canaries around its regions overwritten", q.idx)
		}
	}
	if !srv.wbuf.intact() {
		t.Error("canaries around the counters overwritten")
	}
	if bad := leakcheck.Leaked(10*time.Second, "iwarp/internal/verbs.(*QP)"); len(bad) > 0 {
		t.Errorf("%d QP goroutines still running after every QP closed; first:\n%s", len(bad), bad[0])
	}
}

// checkLoadResults checks that the server verified every iteration each
// client completed, and the two shared counters.
func checkLoadResults(t *testing.T, srv *loadServer, pairs []*loadPair, dur time.Duration) {
	t.Helper()
	var iterations, casTries int
	var casDone [loadCASWords]int
	var fetched []uint64
	for _, p := range pairs {
		if p.iterations == 0 {
			t.Errorf("client QP %d completed no iteration", p.idx)
		}
		if p.server.seq != p.iterations {
			t.Errorf("QP %d: the server verified %d iterations, the client completed %d", p.idx, p.server.seq, p.iterations)
		}
		iterations += p.iterations
		casDone[p.idx%loadCASWords] += p.casDone
		casTries += p.casTries
		fetched = append(fetched, p.fetched...)
	}
	fa, _ := srv.words.AtomicLoad(0)
	if fa != uint64(len(fetched)) {
		t.Errorf("FetchAdd counter %d, want %d (one per FetchAdd)", fa, len(fetched))
	}
	slices.Sort(fetched)
	for i, v := range fetched {
		if v != uint64(i) {
			t.Errorf("FetchAdd results: sorted value %d is %d: a value was returned twice or skipped", i, v)
			break
		}
	}
	totalCAS := 0
	for w, done := range casDone {
		if cas, _ := srv.words.AtomicLoad(8 + 8*w); cas != uint64(done) {
			t.Errorf("CompareSwap counter %d is %d, want %d successful increments", w, cas, done)
		}
		totalCAS += done
	}
	// 5 verified payload operations, FetchAdd, the acknowledgement and
	// the CompareSwaps per iteration.
	ops := iterations*8 + casTries
	t.Logf("%d iterations in %v: %d operations verified (%.0f/s), %d FetchAdds, %d CompareSwap increments in %d attempts",
		iterations, dur, ops, float64(ops)/dur.Seconds(), len(fetched), totalCAS, casTries)
}

// connectLoad connects every pair, several at a time, with CRC on and
// off and with markers, and checks what each connection negotiated.
func connectLoad(ctx context.Context, srv *loadServer, pairs []*loadPair) error {
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", &iwarp.ListenConfig{MaxPending: 256})
	if err != nil {
		return err
	}
	defer ln.Close()
	const workers = 16
	jobs := make(chan *loadPair)
	errc := make(chan error, 2*workers)
	var wg sync.WaitGroup
	var accepts atomic.Int64
	for range workers {
		wg.Go(func() { // accept
			for accepts.Add(1) <= int64(len(pairs)) {
				req, err := ln.Accept(ctx)
				if err != nil {
					errc <- err
					return
				}
				pd := req.PrivateData()
				if len(pd) != 5 || int(binary.BigEndian.Uint32(pd)) >= len(pairs) {
					errc <- fmt.Errorf("connection request with private data %x", pd)
					return
				}
				q := srv.qps[binary.BigEndian.Uint32(pd)]
				if err := req.Accept(ctx, q.qp, loadConnOptions(int(pd[4]), nil)); err != nil {
					errc <- fmt.Errorf("accept QP %d: %w", q.idx, err)
					return
				}
			}
		})
		wg.Go(func() { // connect
			for p := range jobs {
				if err := p.connect(ctx, ln.Addr().String()); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	var first error
	for _, p := range pairs {
		select {
		case jobs <- p:
			continue
		case first = <-errc:
			ln.Close() // ends the acceptors' waits
		}
		break
	}
	close(jobs)
	if first == nil {
		// The last connections may still fail.
		go func() {
			wg.Wait()
			close(errc)
		}()
		if err := <-errc; err != nil {
			ln.Close()
			first = err
		}
	}
	return first
}

// loadConnOptions are the options of pair idx (variant idx%4: CRC, no
// CRC, markers, no CRC and markers), with the given private data.
func loadConnOptions(idx int, private []byte) *iwarp.ConnOptions {
	return &iwarp.ConnOptions{PrivateData: private, DisableCRC: idx%4 == 1 || idx%4 == 3, Interop: &iwarp.InteropOptions{Markers: idx%4 >= 2}}
}

// connect connects the pair's client QP and checks the negotiation.
func (p *loadPair) connect(ctx context.Context, addr string) error {
	private := binary.BigEndian.AppendUint32(nil, uint32(p.idx))
	private = append(private, byte(p.idx%4))
	opts := loadConnOptions(p.idx, private)
	if err := p.qp.Connect(ctx, "tcp", addr, opts); err != nil {
		return fmt.Errorf("connect QP %d: %w", p.idx, err)
	}
	a := p.qp.Attributes()
	if a.CRC == opts.DisableCRC || a.SendMarkers != opts.Interop.Markers || a.RecvMarkers != opts.Interop.Markers || !a.V2 {
		return fmt.Errorf("QP %d negotiated %+v for %+v", p.idx, a, opts)
	}
	return nil
}

// closeLoad closes every QP of the test and waits until each is done.
func closeLoad(t *testing.T, srv *loadServer, pairs []*loadPair) {
	for _, p := range pairs {
		if p != nil {
			p.qp.Close()
		}
	}
	for _, q := range srv.qps {
		q.qp.Close()
	}
	timeout := time.After(30 * time.Second)
	for _, p := range pairs {
		if p == nil {
			continue
		}
		select {
		case <-p.qp.Done():
		case <-timeout:
			t.Fatalf("client QP %d not done 30 s after Close", p.idx)
		}
	}
	for _, q := range srv.qps {
		select {
		case <-q.qp.Done():
		case <-timeout:
			t.Fatalf("server QP %d not done 30 s after Close", q.idx)
		}
	}
}
