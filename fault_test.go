package iwarp_test

import (
	"context"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/leakcheck"
)

// The fault-injection matrix (docs/security.md "Fault injection"): every
// phase of a connection's life (fault_phases_test.go) meets every fault
// the proxy can inject (fault_proxy_test.go), and each cell checks the
// same contract in its own subtests.

// Settings of the matrix. The bound each cell asserts follows from them.
const (
	// faultOpTimeout is QPConfig.OpTimeout of every QP: a connected side
	// waiting for a stalled peer fails after it.
	faultOpTimeout = time.Second
	// faultSetupTimeout is ConnOptions.Timeout of both sides and
	// ListenConfig.StartupTimeout: a stalled startup fails after it.
	faultSetupTimeout = time.Second
	// faultBound: every outstanding work request completes, every
	// blocking call returns and every Close returns within this of the
	// fault: the larger of the two settings plus a generous allowance
	// for scheduling under -race on a loaded machine.
	faultBound = max(faultOpTimeout, faultSetupTimeout) + 4*time.Second
)

// faultKinds are the faults of the matrix, in order.
var faultKinds = []faultKind{faultDie, faultReset, faultHalfClose, faultStall}

// TestFault runs the matrix: TestFault/<phase>/<fault>/<assertion>.
func TestFault(t *testing.T) {
	for _, ph := range faultPhases {
		t.Run(ph.name, func(t *testing.T) {
			for _, f := range faultKinds {
				t.Run(f.String(), func(t *testing.T) { runFaultCell(t, ph, f) })
			}
		})
	}
}

// faultPhase drives a connection to one phase of its life and arms the
// proxy so that the fault strikes there.
type faultPhase struct {
	name string
	// run connects (or starts connecting), posts the phase's work and
	// arms the fault; it returns once the work is posted.
	run func(t *testing.T, c *faultCell)
	// busyOnStall marks the sides (Connect side, Accept side) that wait
	// for the peer in this phase, so that a stall fails them by
	// themselves; an idle side may rightly stay up until it is closed.
	busyOnStall [2]bool
	// startupGoroutine: the fault hits the listener's own startup of the
	// proxied connection, which must end within the bound.
	startupGoroutine bool
}

// faultCall is a blocking call made by a phase, which must return within
// the bound once the fault struck.
type faultCall struct {
	name string
	// mayPass: success is possible because the call may have finished
	// before the fault (else it must return an error).
	mayPass bool
	done    chan struct{}
	err     error
	at      time.Time
}

// faultWR is a posted work request that must complete exactly once.
type faultWR struct {
	id   uint64
	recv bool
}

// faultCell is one cell of the matrix: two endpoints connected through the
// proxy, and what the phase expects of them.
type faultCell struct {
	fault faultKind
	proxy *faultProxy
	ln    *iwarp.Listener
	ep    [2]*endpoint // Connect side (through the proxy), Accept side
	calls []*faultCall
	wrs   [2][]faultWR
	got   [2]map[uint64][]iwarp.Completion
	// memCheck, if set, checks the endpoints' memory once both QPs are
	// closed.
	memCheck func(t *testing.T)
}

func runFaultCell(t *testing.T, ph *faultPhase, f faultKind) {
	c := newFaultCell(t, f)
	ph.run(t, c)
	select {
	case <-c.proxy.Faulted():
	case <-time.After(30 * time.Second):
		t.Fatal("the fault was never injected: the phase's trigger did not fire")
	}
	deadline := c.proxy.FaultedAt().Add(faultBound)
	t.Run("calls-return-within-bound", func(t *testing.T) { c.checkCalls(t, deadline, ph.startupGoroutine) })
	t.Run("flushed-within-bound", func(t *testing.T) { c.checkFlushed(t, deadline, ph.busyOnStall) })
	t.Run("close-within-bound", c.checkClose)
	if c.memCheck != nil {
		t.Run("memory-correct", c.memCheck)
	}
	t.Run("serves-new-connection", c.checkNewConnection)
	t.Run("no-goroutine-leak", c.checkNoLeak)
}

// newFaultEndpoint is an endpoint whose QP has the matrix's OpTimeout and
// two receives posted (IDs 100 and 101), which must be flushed.
func newFaultEndpoint(t *testing.T, dev *iwarp.Device) *endpoint {
	t.Helper()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.NewCQ(64, nil)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 16, RecvQueueDepth: 16, OpTimeout: faultOpTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qp.Close() })
	return &endpoint{dev: dev, pd: pd, cq: cq, qp: qp}
}

func newFaultCell(t *testing.T, f faultKind) *faultCell {
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", &iwarp.ListenConfig{StartupTimeout: faultSetupTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &faultCell{fault: f, ln: ln, proxy: newFaultProxy(t, ln.Addr().String())}
	for s := range c.ep {
		c.ep[s] = newFaultEndpoint(t, iwarp.NewDevice(nil))
		c.got[s] = map[uint64][]iwarp.Completion{}
		buf := make([]byte, 128)
		mr, err := c.ep[s].pd.RegisterMemory(buf, iwarp.AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range []uint64{100, 101} {
			if err := c.ep[s].qp.PostRecv(iwarp.RecvWR{ID: id, SGL: []iwarp.SGE{mr.SGE(64*i, 64)}}); err != nil {
				t.Fatal(err)
			}
			c.expect(s, faultWR{id: id, recv: true})
		}
	}
	return c
}

// faultConnOptions bound both sides' startups by faultSetupTimeout.
func faultConnOptions() *iwarp.ConnOptions {
	return &iwarp.ConnOptions{Timeout: faultSetupTimeout}
}

// connectCall starts the Connect side's Connect through the proxy.
func (c *faultCell) connectCall(mayPass bool) *faultCall {
	return c.call("Connect", mayPass, func() error {
		return c.ep[0].qp.Connect(context.Background(), "tcp", c.proxy.Addr(), faultConnOptions())
	})
}

// acceptCall starts the Accept side's Listener.Accept and ConnRequest.Accept.
func (c *faultCell) acceptCall(mayPass bool) *faultCall {
	return c.call("Accept", mayPass, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := c.ln.Accept(ctx)
		if err != nil {
			return err
		}
		return req.Accept(context.Background(), c.ep[1].qp, faultConnOptions())
	})
}

// establish connects the two endpoints through the proxy, before any fault.
func (c *faultCell) establish(t *testing.T) {
	t.Helper()
	acc, con := c.acceptCall(true), c.connectCall(true)
	for _, fc := range []*faultCall{con, acc} {
		<-fc.done
		if fc.err != nil {
			t.Fatalf("%s before the fault: %v", fc.name, fc.err)
		}
	}
	c.calls = c.calls[:0] // done before the fault: not part of the cell
}

// call runs fn, a blocking call of the phase, on its own goroutine.
func (c *faultCell) call(name string, mayPass bool, fn func() error) *faultCall {
	fc := &faultCall{name: name, mayPass: mayPass, done: make(chan struct{})}
	c.calls = append(c.calls, fc)
	go func() {
		fc.err = fn()
		fc.at = time.Now()
		close(fc.done)
	}()
	return fc
}

// expect records posted work requests of side s that must complete.
func (c *faultCell) expect(s int, wrs ...faultWR) { c.wrs[s] = append(c.wrs[s], wrs...) }

// postSend posts send WRs on side s and expects them to be flushed.
func (c *faultCell) postSend(t *testing.T, s int, wrs ...iwarp.SendWR) {
	t.Helper()
	if err := c.ep[s].qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	for _, wr := range wrs {
		c.expect(s, faultWR{id: wr.ID})
	}
}

// checkCalls: every blocking call returned within the bound of the fault,
// with an error where it could not have succeeded.
func (c *faultCell) checkCalls(t *testing.T, deadline time.Time, startup bool) {
	for _, fc := range c.calls {
		select {
		case <-fc.done:
		case <-time.After(time.Until(deadline)):
			t.Errorf("%s still blocked %v after the fault", fc.name, faultBound)
			continue
		}
		if fc.at.After(deadline) {
			t.Errorf("%s returned %v after the fault, later than %v", fc.name, fc.at.Sub(c.proxy.FaultedAt()), faultBound)
		}
		t.Logf("%s returned %v after the fault: %v", fc.name, fc.at.Sub(c.proxy.FaultedAt()).Round(time.Millisecond), fc.err)
		if fc.err == nil && !fc.mayPass {
			t.Errorf("%s succeeded although the fault came first", fc.name)
		}
	}
	if startup {
		if bad := leakcheck.Leaked(time.Until(deadline), "iwarp.(*Listener).startup"); len(bad) > 0 {
			t.Errorf("the listener's startup of the faulted connection still runs %v after the fault:\n%s", faultBound, bad[0])
		}
	}
}

// checkFlushed: every outstanding send WR completed, as flushed, within the
// bound, and each side that was connected went down by itself (a side
// idle under a stall may stay up: that is TCP keepalive's job).
func (c *faultCell) checkFlushed(t *testing.T, deadline time.Time, busyOnStall [2]bool) {
	for s, ep := range c.ep {
		for _, wr := range c.wrs[s] {
			if wr.recv {
				continue
			}
			if !c.waitCompletion(s, wr.id, deadline) {
				t.Errorf("side %d: WR %d not completed %v after the fault", s, wr.id, faultBound)
			}
		}
		if ep.qp.State() == iwarp.StateIdle || (c.fault == faultStall && !busyOnStall[s]) {
			continue
		}
		select {
		case <-ep.qp.Done():
			t.Logf("side %d: QP down: %v", s, ep.qp.Err())
		case <-time.After(time.Until(deadline)):
			t.Errorf("side %d: QP still %v %v after the fault", s, ep.qp.State(), faultBound)
		}
	}
}

// waitCompletion polls side s's CQ until WR id has completed or the
// deadline passes.
func (c *faultCell) waitCompletion(s int, id uint64, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for len(c.got[s][id]) == 0 {
		comp, err := c.ep[s].cq.Next(ctx)
		if err != nil {
			return false
		}
		c.got[s][comp.ID] = append(c.got[s][comp.ID], comp)
	}
	return true
}

// checkClose: Close returns within the bound on both sides, and then every
// work request has completed exactly once, flushed with its error.
func (c *faultCell) checkClose(t *testing.T) {
	for s, ep := range c.ep {
		start := time.Now()
		ep.qp.Close()
		if d := time.Since(start); d > faultBound {
			t.Errorf("side %d: Close took %v", s, d)
		}
		select {
		case <-ep.qp.Done():
		default:
			t.Errorf("side %d: Done not closed after Close", s)
		}
		comps := make([]iwarp.Completion, 64)
		for n := ep.cq.Poll(comps); n > 0; n = ep.cq.Poll(comps) {
			for _, comp := range comps[:n] {
				c.got[s][comp.ID] = append(c.got[s][comp.ID], comp)
			}
		}
		for _, wr := range c.wrs[s] {
			got := c.got[s][wr.id]
			if len(got) != 1 {
				t.Errorf("side %d: WR %d completed %d times", s, wr.id, len(got))
				continue
			}
			if comp := got[0]; comp.Status != iwarp.StatusFlushed || comp.Err == nil {
				t.Errorf("side %d: WR %d completed with %v (%v), want flushed with the QP's error", s, wr.id, comp.Status, comp.Err)
			}
		}
	}
}

// checkNewConnection: both devices and the listener serve a new connection
// (directly, not through the proxy) that carries a Write and a Read.
func (c *faultCell) checkNewConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := newFaultEndpoint(t, c.ep[0].dev), newFaultEndpoint(t, c.ep[1].dev)
	defer a.qp.Close()
	defer b.qp.Close()
	if cerr, aerr := dialAccept(ctx, c.ln, "tcp", c.ln.Addr().String(), a.qp, b.qp, nil, nil); cerr != nil || aerr != nil {
		t.Fatalf("connect: %v, accept: %v", cerr, aerr)
	}
	roundTrip(t, ctx, a, b)
}

// checkNoLeak: once everything of the cell is closed, none of its
// goroutines is left.
func (c *faultCell) checkNoLeak(t *testing.T) {
	c.ln.Close()
	c.proxy.Close()
	for _, ep := range c.ep {
		ep.qp.Close()
	}
	if bad := leakcheck.Leaked(3*time.Second, "iwarp/internal/verbs.(*QP)", "iwarp.(*Listener)", "iwarp_test.(*faultProxy)", "iwarp_test.(*faultCell)"); len(bad) > 0 {
		t.Errorf("%d goroutines left, the first:\n%s", len(bad), bad[0])
	}
}
