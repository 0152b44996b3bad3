package iwarp_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/conform"
)

// The hostile-peer suite (internal/conform, also `iwarp conform`) run
// against a real endpoint: a Listener whose connections each get a QP with
// posted receives and the advertised regions of `iwarp serve`. Each case is
// a subtest named after the Terminate it expects. Beyond the suite's own
// verdict (the peer's view: the Terminate's code and exact bytes), each
// case checks the endpoint's side: the error the QP surfaces, every posted
// receive completed exactly once (flushed after a Terminate), canaries
// around every registered region intact, no goroutine left behind, and a
// bystander connection of the same Device still serving Writes and Reads.

const hostileCanary = 0xCA

// hostileResponder is the endpoint under attack.
type hostileResponder struct {
	dev     *iwarp.Device
	pd      *iwarp.PD
	ln      *iwarp.Listener
	advert  []byte
	main    *iwarp.MR // 1 MiB, remote read/write/atomic
	zones   [][]byte  // guard | region | guard, for every region
	guard   int
	markers atomic.Bool // ask connecting peers for markers
	hostile atomic.Bool // connections from now on are the hostile peer's
	noRead  atomic.Bool // post no Read on the next connections

	mu  sync.Mutex
	qps []*servedQP // every accepted connection, in order
}

// servedQP is one accepted connection with its completion record.
type servedQP struct {
	qp     *iwarp.QP
	cq     *iwarp.CQ
	posted int
	done   chan struct{} // closed when every posted receive has completed
	// recording is closed when the goroutine that records completions has
	// started: a case's goroutine count must not include the bystander's.
	recording chan struct{}
	mu        sync.Mutex
	comps     []iwarp.Completion
}

const (
	hostileRecvs  = 16
	hostileReadID = 1000 // the outstanding Read's WR ID
)

func newHostileResponder(t *testing.T) *hostileResponder {
	t.Helper()
	h := &hostileResponder{dev: iwarp.NewDevice(nil), guard: 256}
	var err error
	if h.pd, err = h.dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	other, err := h.dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	reg := func(pd *iwarp.PD, n int, acc iwarp.Access) *iwarp.MR {
		mr, err := pd.RegisterMemory(h.canaried(n), acc)
		if err != nil {
			t.Fatal(err)
		}
		return mr
	}
	h.main = reg(h.pd, 1<<20, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite|iwarp.AccessRemoteAtomic)
	ro := reg(h.pd, 4096, iwarp.AccessRemoteRead)
	op := reg(other, 4096, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite|iwarp.AccessRemoteAtomic)
	dead := reg(h.pd, 4096, iwarp.AccessRemoteWrite)
	deadRemote := dead.Remote()
	if err := dead.Deregister(context.Background()); err != nil {
		t.Fatal(err)
	}
	rk := reg(h.pd, 4096, iwarp.AccessRemoteWrite)
	oldRemote := rk.Remote()
	if _, err := rk.Rekey(context.Background(), iwarp.AccessRemoteWrite); err != nil {
		t.Fatal(err)
	}
	wo := reg(h.pd, 4096, iwarp.AccessRemoteWrite)
	for _, r := range []iwarp.RemoteBuffer{h.main.Remote(), ro.Remote(), op.Remote(), deadRemote, oldRemote, wo.Remote()} {
		h.advert, _ = r.AppendBinary(h.advert)
	}
	h.advert = h.appendWindows(t, h.advert) // hostile_mw_test.go
	if h.ln, err = iwarp.Listen("tcp", "127.0.0.1:0", &iwarp.ListenConfig{StartupTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	return h
}

// serve accepts connections until ctx ends.
func (h *hostileResponder) serve(t *testing.T, ctx context.Context) {
	for {
		req, err := h.ln.Accept(ctx)
		if err != nil {
			return
		}
		if err := h.accept(ctx, req); err != nil {
			t.Errorf("accept: %v", err)
		}
	}
}

// accept gives a connection its QP with hostileRecvs receives of 4 KiB
// posted (never re-posted) and a goroutine that records its completions.
func (h *hostileResponder) accept(ctx context.Context, req *iwarp.ConnRequest) error {
	cq, err := h.dev.NewCQ(64, nil)
	if err != nil {
		return err
	}
	qp, err := h.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 8, RecvQueueDepth: hostileRecvs, IRD: 16, ORD: 16,
		OpTimeout: 15 * time.Second})
	if err != nil {
		return err
	}
	hostile := h.hostile.Load() && !h.noRead.Load() // read before Accept: the bystander's is not
	rb := h.reg(hostileRecvs * 4096)
	s := &servedQP{qp: qp, cq: cq, posted: hostileRecvs, done: make(chan struct{}), recording: make(chan struct{})}
	for i := 0; i < hostileRecvs; i++ {
		if err := qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{rb.SGE(i*4096, 4096)}}); err != nil {
			return err
		}
	}
	h.mu.Lock()
	h.qps = append(h.qps, s)
	h.mu.Unlock()
	// The recorder starts once everything is posted (the CQ holds the
	// completions until then), so that posted is final.
	defer func() {
		go func() {
			defer close(s.done)
			close(s.recording)
			for n := 0; n < s.posted; n++ {
				c, err := cq.Next(context.Background())
				if err != nil {
					return
				}
				s.mu.Lock()
				s.comps = append(s.comps, c)
				s.mu.Unlock()
			}
		}()
	}()
	if err := req.Accept(ctx, qp, &iwarp.ConnOptions{PrivateData: h.advert, Interop: &iwarp.InteropOptions{Markers: h.markers.Load()}}); err != nil {
		qp.Close()
		return nil // the hostile peer may break its own startup
	}
	// On the hostile peer's connections (not the bystander's, whose peer
	// is a real endpoint) an RDMA Read is outstanding too: the peer never
	// answers it, so it must complete, exactly once, with an error.
	if !hostile {
		return nil
	}
	sink := h.reg(64)
	if err := qp.PostSend(iwarp.SendWR{ID: hostileReadID, Op: iwarp.OpRead, Flags: iwarp.Signaled, SGL: []iwarp.SGE{sink.SGE(0, 64)},
		Remote: iwarp.RemoteBuffer{STag: 0x00123400, Len: 64}}); err == nil {
		s.posted++
	} else if qp.Err() == nil {
		return err
	}
	return nil
}

// reg registers a canaried local receive buffer.
func (h *hostileResponder) reg(n int) *iwarp.MR {
	all := make([]byte, n+2*h.guard)
	for i := range all {
		all[i] = hostileCanary
	}
	h.mu.Lock()
	h.zones = append(h.zones, all)
	h.mu.Unlock()
	mr, _ := h.pd.RegisterMemory(all[h.guard:h.guard+n], iwarp.AccessLocalWrite)
	return mr
}

// canariesIntact reports whether every guard zone is untouched.
func (h *hostileResponder) canariesIntact() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, all := range h.zones {
		for i := 0; i < h.guard; i++ {
			if all[i] != hostileCanary || all[len(all)-1-i] != hostileCanary {
				return false
			}
		}
	}
	return true
}

// accepted returns the number of connections accepted so far.
func (h *hostileResponder) accepted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.qps)
}

func (h *hostileResponder) last() *servedQP {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.qps[len(h.qps)-1]
}

func TestHostilePeer(t *testing.T) {
	h := newHostileResponder(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); h.serve(t, ctx) }()
	defer func() {
		cancel()
		h.ln.Close()
		<-served
		h.mu.Lock()
		for _, s := range h.qps {
			s.qp.Close()
		}
		h.mu.Unlock()
	}()

	// The bystander: a well-behaved connection to the same Listener, kept
	// open through the whole suite.
	by := newEndpoint(t)
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := by.qp.Connect(bctx, "tcp", h.ln.Addr().String(), nil); err != nil {
		t.Fatal(err)
	}
	bcancel()
	for h.accepted() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	bystander := h.last()
	// Its recorder starts once its Accept has returned, which may be after
	// the bystander is already connected: the first case must not count it.
	<-bystander.recording
	h.hostile.Store(true)
	stillServing := func(t testing.TB, round int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		remote, _ := h.main.RemoteSlice(1<<19, 64)
		msg := bytes.Repeat([]byte{byte(round)}, 64)
		src, _ := by.pd.RegisterMemory(msg, 0)
		sink, _ := by.pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
		defer src.Close()
		defer sink.Close()
		if err := by.qp.Write(ctx, remote, src.SGE(0, 64)); err != nil {
			t.Fatalf("bystander Write: %v", err)
		}
		if err := by.qp.Read(ctx, remote, sink.SGE(0, 64)); err != nil || !bytes.Equal(sink.Bytes(), msg) {
			t.Fatalf("bystander Read: %v (%x)", err, sink.Bytes()[:8])
		}
	}

	o := &conform.Options{
		Dial: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", h.ln.Addr().String())
		},
		Wait: 3 * time.Second, StartupWait: 4 * time.Second,
	}
	stillServing(t, 255)
	cases := conform.All()
	if len(cases) < 40 {
		t.Fatalf("the suite has %d cases, want at least 40", len(cases))
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if c.Name == "Startup/FPDU-pipelined-after-Request/refused" && !peekDetectsPipelining {
				t.Skip("pipelined bytes are detected at startup on Linux only (mpa.md decision 13); on this build they surface in full operation")
			}
			if strings.Contains(c.Name, "marker") {
				h.markers.Store(true)
				defer h.markers.Store(false)
			}
			if strings.Contains(c.Name, "Read-Response-unsolicited") { // no Read of ours may be outstanding
				h.noRead.Store(true)
				defer h.noRead.Store(false)
			}
			before, lastGoroutine := h.accepted(), maxGoroutineID()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := conform.Run(ctx, c, o)
			if r.Verdict == conform.Skip {
				t.Fatalf("skipped against our own responder: %s", r.Reason)
			}
			if r.Verdict != conform.Pass {
				t.Fatalf("%s: observed %s", r.Reason, r.Observed)
			}
			if r.ExpectedTerminate != nil && !r.Exact {
				t.Fatalf("Terminate bytes\n got % x\nwant % x", r.Observed.TerminateULPDU, r.ExpectedTerminate)
			}
			if c.Raw != nil {
				checkStartupCase(t, h, c, before)
			} else {
				if h.accepted() != before+1 {
					t.Fatalf("%d connections accepted, want 1", h.accepted()-before)
				}
				checkServedQP(t, h.last(), c)
			}
			if !h.canariesIntact() {
				t.Fatal("a byte was written outside the registered regions")
			}
			waitGoroutinesExited(t, lastGoroutine)
			stillServing(t, i)
		})
	}
	if bystander.qp.Err() != nil {
		t.Fatalf("the bystander's QP failed: %v", bystander.qp.Err())
	}
}

// checkStartupCase: a refused startup creates no QP; an accepted one gets
// one that ends cleanly when the peer leaves.
func checkStartupCase(t *testing.T, h *hostileResponder, c *conform.Case, before int) {
	t.Helper()
	switch c.Want.Kind {
	case conform.WantRefused:
		if n := h.accepted() - before; n != 0 {
			t.Fatalf("a refused startup reached Accept (%d QPs)", n)
		}
	case conform.WantAccept:
		deadline := time.Now().Add(3 * time.Second)
		for h.accepted() == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if h.accepted() != before+1 {
			t.Fatal("the slow startup was not accepted")
		}
		s := h.last()
		s.qp.Close()
		waitQP(t, s)
	}
}

// checkServedQP checks the attacked QP: torn down with the right error
// (or still healthy until the peer left), every posted receive completed
// once, and the data of accepted cases placed.
func checkServedQP(t *testing.T, s *servedQP, c *conform.Case) {
	t.Helper()
	waitQP(t, s)
	err := s.qp.Err()
	var te *iwarp.TerminateError
	switch c.Want.Kind {
	case conform.WantTerminate:
		want := c.Want.Code
		if !errors.As(err, &te) || !te.Sent || te.Code != want || !errors.Is(err, iwarp.ErrTerminated) {
			t.Fatalf("QP error %v, want a sent Terminate %v", err, want)
		}
	case conform.WantClosed: // the peer's Terminate, surfaced as received
		if !errors.As(err, &te) || te.Sent {
			t.Fatalf("QP error %v, want a received Terminate", err)
		}
		if strings.Contains(c.Name, "siw-layout") && (!te.SiwLayout || te.Control != [4]byte{0x21, 0x01, 0, 0} || te.Code != iwarp.TermDDPInvalidQN) {
			t.Fatalf("siw-layout Terminate surfaced as %+v", te)
		}
		if strings.Contains(c.Name, "garbage") && te.Control != [4]byte{0xFF, 0xFF, 0xFF, 0xFF} {
			t.Fatalf("garbage Terminate surfaced with control % x", te.Control)
		}
	case conform.WantAccept:
		if errors.As(err, &te) && te.Sent {
			t.Fatalf("accepted case, but the QP sent a Terminate: %v", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.comps) != s.posted {
		t.Fatalf("%d receive completions, want %d", len(s.comps), s.posted)
	}
	seen := map[uint64]bool{}
	for _, cp := range s.comps {
		if seen[cp.ID] {
			t.Fatalf("work request %d completed twice", cp.ID)
		}
		seen[cp.ID] = true
		if cp.ID == hostileReadID {
			if cp.Status == iwarp.StatusSuccess || cp.Err == nil {
				t.Fatalf("the unanswered Read completed with %v (%v)", cp.Status, cp.Err)
			}
			continue
		}
		if cp.Status != iwarp.StatusSuccess && cp.Status != iwarp.StatusFlushed {
			t.Fatalf("receive %d completed with %v", cp.ID, cp.Status)
		}
	}
	if c.Name == "DDP/tagged-Write-inside-untagged-Send/accepted" {
		ok := false
		for _, cp := range s.comps {
			ok = ok || cp.ID == 0 && cp.Status == iwarp.StatusSuccess && cp.Len == 8
		}
		if !ok {
			t.Fatalf("the Send around the Write did not complete: %+v", s.comps)
		}
	}
}

// waitQP waits for the QP's teardown and its completion recorder.
func waitQP(t *testing.T, s *servedQP) {
	t.Helper()
	select {
	case <-s.qp.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("QP not torn down (state %v)", s.qp.State())
	}
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		t.Fatal("posted receives not all completed after teardown")
	}
	_ = s.qp.Close()
}

// waitGoroutinesExited waits until every goroutine started after the one
// numbered last has exited (goroutine IDs only grow): whatever the case
// started — startups, the attacked QP's loops — must be gone. Goroutines
// of earlier tests that are still winding down do not count.
func waitGoroutinesExited(t *testing.T, last int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, g := range goroutineStacks() {
			if id, _ := strconv.Atoi(strings.Fields(g)[1]); id > last && !idleWorker(g) {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines started by the case still run:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// idleWorker reports whether stack g is a Device worker parked between
// jobs: a pooled goroutine the Device keeps (and reuses) until it is
// closed, not one of the case's. (On the portable path every write goes
// through a worker.)
func idleWorker(g string) bool {
	lines := strings.Split(g, "\n")
	return len(lines) > 1 && strings.Contains(lines[1], "internal/verbs.(*workers).work(")
}

// maxGoroutineID returns the highest ID of the running goroutines.
func maxGoroutineID() int {
	m := 0
	for _, g := range goroutineStacks() {
		if id, _ := strconv.Atoi(strings.Fields(g)[1]); id > m {
			m = id
		}
	}
	return m
}

// goroutineStacks returns the stack of every goroutine, each starting with
// "goroutine N [state]:".
func goroutineStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}
