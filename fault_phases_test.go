package iwarp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// The phases of the fault matrix: where in a connection's life the fault
// strikes. Side 0 is the Connect side (through the proxy), side 1 the
// Accept side.
var faultPhases = []*faultPhase{
	{name: "startup-Request", run: phaseStartupRequest, startupGoroutine: true},
	{name: "startup-Reply", run: phaseStartupReply},
	{name: "startup-RTR", run: phaseStartupRTR},
	{name: "mid-Write", run: phaseMidWrite, busyOnStall: [2]bool{true, false}},
	{name: "mid-Read-Response", run: phaseMidReadResponse, busyOnStall: [2]bool{true, true}},
	{name: "atomics-outstanding", run: phaseAtomics, busyOnStall: [2]bool{true, false}},
	{name: "Close-racing", run: phaseCloseRacing},
	{name: "during-Disconnect", run: phaseDuringDisconnect, busyOnStall: [2]bool{true, false}},
	{name: "Disconnect-half-closed", run: phaseDisconnectHalfClosed, busyOnStall: [2]bool{true, false}},
}

// phaseStartupRequest: the MPA Request never reaches the listener; the
// Connect side waits for a Reply, the listener for a Request.
func phaseStartupRequest(t *testing.T, c *faultCell) {
	c.proxy.Arm(c2s, faultTrigger{after: 0, fault: c.fault})
	c.connectCall(false)
}

// phaseStartupReply: the Accept side answered; its Reply is withheld and
// the fault strikes while the Connect side waits for it and the Accept
// side waits for the RTR.
func phaseStartupReply(t *testing.T, c *faultCell) {
	c.proxy.Arm(s2c, faultTrigger{after: 0, fault: c.fault})
	c.acceptCall(false)
	c.connectCall(false)
}

// phaseStartupRTR: the Connect side got the Reply and sent its RTR, which
// is withheld: it may already be connected while the Accept side still
// waits for the RTR.
func phaseStartupRTR(t *testing.T, c *faultCell) {
	c.proxy.Arm(c2s, faultTrigger{after: -1, onOther: true, fault: c.fault})
	c.acceptCall(false)
	c.connectCall(true)
}

// writeSetup is the memory of the Write phases: a source on the Connect
// side, a canary-guarded sink on the Accept side, and a first Write whose
// placement a Read proved before the fault.
type writeSetup struct {
	src        *iwarp.MR
	sink       *canaryBuf
	sinkMR     *iwarp.MR
	local      *canaryBuf // Connect side: the sink of a Read that is flushed
	localMR    *iwarp.MR
	remoteRead iwarp.RemoteBuffer
	posted     bool // W2, W3 and R3 were posted
}

func newWriteSetup(t *testing.T, c *faultCell) *writeSetup {
	t.Helper()
	a, b := c.ep[0], c.ep[1]
	w := &writeSetup{
		sink:  newCanaryBuf("W1", faultPage, "W2", faultBig, "W3", faultPage, "W4", faultPage),
		local: newCanaryBuf("proof", faultPage, "R3", faultPage),
	}
	var err error
	if w.src, err = a.pd.RegisterMemory(faultSource(), 0); err != nil {
		t.Fatal(err)
	}
	if w.sinkMR, err = b.pd.RegisterMemory(w.sink.buf, iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	if w.localMR, err = a.pd.RegisterMemory(w.local.buf, iwarp.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.qp.Write(ctx, w.sink.remote(t, w.sinkMR, "W1"), w.src.SGE(0, faultPage)); err != nil {
		t.Fatal(err)
	}
	// Read after Write: W1 is placed at the sink (docs/semantics.md §3).
	w.remoteRead = w.sink.remote(t, w.sinkMR, "W1")
	if err := a.qp.Read(ctx, w.remoteRead, w.local.sge(w.localMR, "proof")); err != nil {
		t.Fatal(err)
	}
	return w
}

// postAfterFirst posts the work that the fault interrupts or flushes: the
// large Write W2, a small Write W3 and a Read R3 behind it.
func (w *writeSetup) postAfterFirst(t *testing.T, c *faultCell) {
	t.Helper()
	w.posted = true
	c.postSend(t, 0,
		iwarp.SendWR{ID: 1, Op: iwarp.OpWrite, Flags: iwarp.Signaled, SGL: []iwarp.SGE{w.src.SGE(0, faultBig)}, Remote: w.sink.remote(t, w.sinkMR, "W2")},
		iwarp.SendWR{ID: 2, Op: iwarp.OpWrite, Flags: iwarp.Signaled, SGL: []iwarp.SGE{w.src.SGE(0, faultPage)}, Remote: w.sink.remote(t, w.sinkMR, "W3")},
		iwarp.SendWR{ID: 3, Op: iwarp.OpRead, Flags: iwarp.Signaled, SGL: []iwarp.SGE{w.local.sge(w.localMR, "R3")}, Remote: w.remoteRead},
	)
}

// check: W1 is at the sink, W2 (if posted) at most as far as it crossed
// the proxy, nothing else changed; the flushed Read placed nothing.
func (w *writeSetup) check(t *testing.T) {
	src := faultSource()
	exact := map[string][]byte{"W1": src[:faultPage]}
	var partial map[string][]byte
	if w.posted {
		partial = map[string][]byte{"W2": src}
	}
	w.sink.checkRanges(t, "Accept side's sink", exact, partial, faultCut)
	w.local.checkRanges(t, "Connect side's Read sink", map[string][]byte{"proof": src[:faultPage]}, nil, 0)
}

// phaseMidWrite: a 64 MiB Write is cut after 4 MiB; a Write and a Read
// queued behind it, and a blocking Write posted after them, are flushed.
func phaseMidWrite(t *testing.T, c *faultCell) {
	c.establish(t)
	w := newWriteSetup(t, c)
	c.proxy.Arm(c2s, faultTrigger{after: faultCut, fault: c.fault})
	w.postAfterFirst(t, c)
	c.call("Write", false, func() error {
		return c.ep[0].qp.Write(context.Background(), w.sink.remote(t, w.sinkMR, "W4"), w.src.SGE(0, faultPage))
	})
	c.memCheck = func(t *testing.T) { w.check(t) }
}

// phaseCloseRacing: as mid-Write, but the Connect side's Close races the
// fault: it is called as the proxy holds, just before the fault.
func phaseCloseRacing(t *testing.T, c *faultCell) {
	c.establish(t)
	w := newWriteSetup(t, c)
	c.proxy.Arm(c2s, faultTrigger{after: faultCut, fault: c.fault})
	w.postAfterFirst(t, c)
	c.call("Close", true, func() error {
		select {
		case <-c.proxy.Held(c2s):
		case <-c.proxy.closed: // the trigger never fired: the cell fails
		}
		return c.ep[0].qp.Close()
	})
	c.memCheck = func(t *testing.T) { w.check(t) }
}

// phaseDuringDisconnect: an orderly Disconnect is draining a 64 MiB Write
// when the fault cuts it.
func phaseDuringDisconnect(t *testing.T, c *faultCell) {
	c.establish(t)
	w := newWriteSetup(t, c)
	c.proxy.Arm(c2s, faultTrigger{after: faultCut, fault: c.fault})
	w.postAfterFirst(t, c)
	c.call("Disconnect", true, func() error { return c.ep[0].qp.Disconnect(context.Background()) })
	c.memCheck = func(t *testing.T) { w.check(t) }
}

// phaseDisconnectHalfClosed: Disconnect has sent everything and
// half-closed; the fault strikes while it waits for the peer's close (the
// FIN is withheld).
func phaseDisconnectHalfClosed(t *testing.T, c *faultCell) {
	c.establish(t)
	w := newWriteSetup(t, c)
	c.proxy.Arm(c2s, faultTrigger{after: -1, atEOF: true, fault: c.fault})
	c.call("Disconnect", true, func() error { return c.ep[0].qp.Disconnect(context.Background()) })
	c.memCheck = func(t *testing.T) { w.check(t) }
}

// phaseMidReadResponse: the Response of a 64 MiB Read is cut after 4 MiB;
// a Read queued behind it and a blocking Read posted after it are flushed.
func phaseMidReadResponse(t *testing.T, c *faultCell) {
	c.establish(t)
	a, b := c.ep[0], c.ep[1]
	src, err := b.pd.RegisterMemory(faultSource(), iwarp.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	sink := newCanaryBuf("R0", faultPage, "R1", faultBig, "R2", faultPage, "R3", faultPage)
	sinkMR, err := a.pd.RegisterMemory(sink.buf, iwarp.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	remote := func(n int) iwarp.RemoteBuffer {
		rb, err := src.RemoteSlice(0, n)
		if err != nil {
			t.Fatal(err)
		}
		return rb
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.qp.Read(ctx, remote(faultPage), sink.sge(sinkMR, "R0")); err != nil {
		t.Fatal(err)
	}
	c.proxy.Arm(s2c, faultTrigger{after: faultCut, fault: c.fault})
	c.postSend(t, 0,
		iwarp.SendWR{ID: 1, Op: iwarp.OpRead, Flags: iwarp.Signaled, SGL: []iwarp.SGE{sink.sge(sinkMR, "R1")}, Remote: remote(faultBig)},
		iwarp.SendWR{ID: 2, Op: iwarp.OpRead, Flags: iwarp.Signaled, SGL: []iwarp.SGE{sink.sge(sinkMR, "R2")}, Remote: remote(faultPage)},
	)
	c.call("Read", false, func() error {
		return a.qp.Read(context.Background(), remote(faultPage), sink.sge(sinkMR, "R3"))
	})
	c.memCheck = func(t *testing.T) {
		all := faultSource()
		sink.checkRanges(t, "Connect side's Read sink", map[string][]byte{"R0": all[:faultPage]}, map[string][]byte{"R1": all}, faultCut)
	}
}

// Atomic target words of the Accept side (byte offsets).
const (
	atomicCounter = 8  // FetchAdd target, 100 at first
	atomicSwap    = 16 // CompareSwap target, 7 at first
)

// phaseAtomics: FetchAdd and CompareSwap requests reach the Accept side and
// are executed, but their responses are withheld when the fault strikes.
func phaseAtomics(t *testing.T, c *faultCell) {
	c.establish(t)
	a, b := c.ep[0], c.ep[1]
	target := bytes.Repeat([]byte{faultCanary}, 64)
	binary.NativeEndian.PutUint64(target[atomicCounter:], 100)
	binary.NativeEndian.PutUint64(target[atomicSwap:], 7)
	tmr, err := b.pd.RegisterMemory(target, iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	word := func(off int) iwarp.RemoteBuffer {
		rb, err := tmr.RemoteSlice(off, 8)
		if err != nil {
			t.Fatal(err)
		}
		return rb
	}
	res := newCanaryBuf("r0", 8, "r1", 8, "r2", 8)
	rmr, err := a.pd.RegisterMemory(res.buf, iwarp.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// One atomic completes before the fault: its result must be right.
	if err := a.qp.PostSend(iwarp.SendWR{ID: 10, Op: iwarp.OpFetchAdd, Flags: iwarp.Signaled, SGL: []iwarp.SGE{res.sge(rmr, "r0")}, Remote: word(atomicCounter), Add: 1}); err != nil {
		t.Fatal(err)
	}
	if comp, err := a.cq.Next(ctx); err != nil || comp.ID != 10 || comp.Status != iwarp.StatusSuccess || comp.Original != 100 {
		t.Fatalf("atomic before the fault: %+v %v", comp, err)
	}
	c.proxy.Hold(s2c) // responses withheld from now on
	c.postSend(t, 0,
		iwarp.SendWR{ID: 1, Op: iwarp.OpFetchAdd, Flags: iwarp.Signaled, SGL: []iwarp.SGE{res.sge(rmr, "r1")}, Remote: word(atomicCounter), Add: 5},
		iwarp.SendWR{ID: 2, Op: iwarp.OpCompareSwap, Flags: iwarp.Signaled, SGL: []iwarp.SGE{res.sge(rmr, "r2")}, Remote: word(atomicSwap), Compare: 7, CompareMask: ^uint64(0), Swap: 9, SwapMask: ^uint64(0)},
	)
	c.call("FetchAdd", false, func() error {
		_, err := a.qp.FetchAdd(context.Background(), word(atomicCounter), 10)
		return err
	})
	// The Accept side executed all three before the fault strikes.
	for {
		n, _ := tmr.AtomicLoad(atomicCounter)
		s, _ := tmr.AtomicLoad(atomicSwap)
		if n == 116 && s == 9 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the atomics did not reach the Accept side: counter %d, swap word %d", n, s)
		}
		time.Sleep(time.Millisecond)
	}
	c.proxy.Inject(c.fault)
	c.memCheck = func(t *testing.T) {
		r0 := binary.NativeEndian.AppendUint64(nil, 100)
		res.checkRanges(t, "Connect side's results", map[string][]byte{"r0": r0}, nil, 0)
		want := bytes.Repeat([]byte{faultCanary}, 64)
		binary.NativeEndian.PutUint64(want[atomicCounter:], 116)
		binary.NativeEndian.PutUint64(want[atomicSwap:], 9)
		if !bytes.Equal(target, want) {
			t.Errorf("Accept side's atomic target % x, want % x", target, want)
		}
	}
}
