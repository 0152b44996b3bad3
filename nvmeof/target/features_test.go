package target

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
	"github.com/goiwarp/iwarp/nvmeof"
)

// TestAsyncEvents: AERL+1 requests are held, one more is refused, and a
// controller reset completes the held ones.
func TestAsyncEvents(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	a, _ := admin(t, tt.addr, testNQN)
	aer := nvme.Command{Opcode: nvme.AdminAsyncEvent, Flags: nvme.FlagSGL}
	held := map[uint16]bool{}
	for range aerLimit + 1 {
		held[a.submit(aer, nil)] = true
	}
	rc := a.exec(aer, nil)
	wantStatus(t, "AER over the limit", rc.Status, nvme.StatusAsyncEventLimitExceeded)
	stillServes(t, a)
	// The reset's response and the AERs' come in any order.
	reset := a.submit(nvme.PropertySetCommand(0, nvme.PropCC, 4, 0), nil)
	for range aerLimit + 2 {
		rc, _ := a.next()
		switch {
		case rc.CID == reset:
			wantStatus(t, "CC.EN 0", rc.Status, nvme.StatusSuccess)
		case held[rc.CID]:
			delete(held, rc.CID)
			wantStatus(t, "held AER after the reset", rc.Status, nvme.StatusAbortSQDeleted)
		default:
			t.Fatalf("response for CID %d", rc.CID)
		}
	}
}

// fakeTimers replaces the target's keep-alive timers: each arming is
// sent on armed, and the test fires it by calling its f.
type fakeTimers struct{ armed chan fakeTimer }

type fakeTimer struct {
	d time.Duration
	f func()
}

func (ft *fakeTimers) afterFunc(d time.Duration, f func()) func() bool {
	ft.armed <- fakeTimer{d, f}
	return func() bool { return true }
}

// last returns the latest arming, after those of the commands answered
// so far (a command re-arms the timer before it is answered).
func (ft *fakeTimers) last(t *testing.T) fakeTimer {
	t.Helper()
	var a fakeTimer
	for {
		select {
		case a = <-ft.armed:
		default:
			if a.f == nil {
				t.Fatal("the keep-alive timer was not armed")
			}
			return a
		}
	}
}

// TestKeepAliveTimeout: KATO arms the timer at Connect and each admin
// command re-arms it; a timer that fires for an earlier arming does
// nothing; the current one tears the controller and its queues down.
func TestKeepAliveTimeout(t *testing.T) {
	ft := &fakeTimers{armed: make(chan fakeTimer, 64)}
	tt := newTestTargetHook(t, 1<<20, nil, func(tg *Target) { tg.afterFunc = ft.afterFunc })
	h := mustDial(t, tt.addr, 0, nil)
	rc := h.connect(testNQN, nvme.CNTLIDDynamic, 31, 1250, false)
	wantStatus(t, "Connect", rc.Status, nvme.StatusSuccess)
	first := ft.last(t)
	if first.d != 1300*time.Millisecond {
		t.Errorf("KATO armed for %v, want 1.3s (1250 ms rounded up to KAS)", first.d)
	}
	wantStatus(t, "CC.EN", h.propSet(nvme.PropCC, nvme.CC{EN: true, IOSQES: 6, IOCQES: 4}.Uint32()), nvme.StatusSuccess)
	q := ioQueue(t, tt.addr, 1, nvme.ParseConnectResponse(rc.DW0).CNTLID)
	stillServes(t, h)
	second := ft.last(t)
	first.f() // late: later commands re-armed the timer
	stillServes(t, h)
	rc = h.exec(nvme.Feature{FID: nvme.FeatKeepAlive}.GetCommand(0, 0), nil)
	if !rc.Status.Success() || rc.DW0 != 1300 {
		t.Errorf("Get Features KATO: %d (%v)", rc.DW0, rc.Status)
	}
	second.f() // stale too
	stillServes(t, h)
	ft.last(t).f() // the I/O queue's Connect was traffic: the timer is rescheduled
	stillServes(t, h)
	last := ft.last(t)
	last.f() // nothing within KATO
	wantGone(t, h, "the admin queue after KATO")
	wantGone(t, q, "the I/O queue after KATO")
}

// TestDiscovery: the discovery controller identifies itself as one and
// its log names the subsystem where the host reached it.
func TestDiscovery(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	d, cntlid := admin(t, tt.addr, nvmeof.DiscoveryNQN)
	rc := d.exec(nvme.Identify{CNS: nvme.CNSController}.Command(0, 0, d.keyed(0, nvme.IdentifyLen)), nil)
	wantStatus(t, "Identify", rc.Status, nvme.StatusSuccess)
	id, _ := nvme.DecodeController(d.data.Bytes()[:nvme.IdentifyLen])
	if id.CNTRLTYPE != nvme.CtrlTypeDiscovery || id.SUBNQN != nvmeof.DiscoveryNQN || id.NN != 0 || id.SGLS&nvme.SGLSKeyed == 0 {
		t.Errorf("Identify: %+v", id)
	}
	// The header first, for NUMREC, then the whole page.
	rc = d.exec(nvme.GetLogPage{LID: nvme.LogDiscovery, NUMD: nvme.NUMDFor(nvme.DiscoveryHeaderLen)}.Command(0, 0, d.keyed(0, nvme.DiscoveryHeaderLen)), nil)
	wantStatus(t, "discovery log header", rc.Status, nvme.StatusSuccess)
	hdr, _ := nvme.DecodeDiscoveryLog(d.data.Bytes()[:nvme.DiscoveryHeaderLen])
	if hdr.NUMREC != 1 {
		t.Fatalf("NUMREC %d", hdr.NUMREC)
	}
	n := nvme.DiscoveryHeaderLen + nvme.DiscoveryEntryLen
	rc = d.exec(nvme.GetLogPage{LID: nvme.LogDiscovery, NUMD: nvme.NUMDFor(n)}.Command(0, 0, d.keyed(0, n)), nil)
	wantStatus(t, "discovery log", rc.Status, nvme.StatusSuccess)
	l, _ := nvme.DecodeDiscoveryLog(d.data.Bytes()[:n])
	host, port := splitAddr(t, tt.addr)
	if len(l.Entries) != 1 || l.GENCTR != hdr.GENCTR {
		t.Fatalf("log %+v", l)
	}
	e := l.Entries[0]
	if e.SUBNQN != testNQN || e.TRTYPE != nvme.TRTypeRDMA || e.ADRFAM != nvme.AdrFamIPv4 || e.TRADDR != host ||
		e.TRSVCID != port || e.SUBTYPE != nvme.SubTypeNVM || e.CNTLID != nvme.CNTLIDDynamic ||
		nvme.ParseRDMATSAS(&e.TSAS).CMS != nvme.RDMACMSRDMACM {
		t.Errorf("entry %+v", e)
	}
	// Reading it from an offset, as hosts with small buffers do.
	rc = d.exec(nvme.GetLogPage{LID: nvme.LogDiscovery, NUMD: nvme.NUMDFor(512), Offset: 1024 + 256}.Command(0, 0, d.keyed(0, 512)), nil)
	wantStatus(t, "discovery log at an offset", rc.Status, nvme.StatusSuccess)
	if !bytes.HasPrefix(d.data.Bytes(), []byte(testNQN)) {
		t.Errorf("the entry's SUBNQN at offset 256: %q", d.data.Bytes()[:len(testNQN)])
	}
	// No namespaces, no I/O queues.
	rc = d.exec(nvme.Identify{CNS: nvme.CNSNamespace}.Command(0, 1, d.keyed(0, nvme.IdentifyLen)), nil)
	wantStatus(t, "Identify namespace", rc.Status, nvme.StatusInvalidField)
	io := mustDial(t, tt.addr, 1, nil)
	c := nvme.ConnectData{CNTLID: cntlid, SUBNQN: nvmeof.DiscoveryNQN, HOSTNQN: testHostNQN}
	b := make([]byte, nvme.ConnectDataLen)
	c.Encode(b)
	rc = io.exec(nvme.Connect{QID: 1, SQSIZE: 127}.Command(0, nvme.InlineSGL(0, nvme.ConnectDataLen)), b)
	wantStatus(t, "I/O Connect to the discovery controller", rc.Status, nvme.StatusConnectInvalidParameters)
}

// TestShutdownAndFeatures: Set/Get Features round trips, and a normal
// shutdown completes (CSTS.SHST) with the backend flushed.
func TestShutdownAndFeatures(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	a, _ := admin(t, tt.addr, testNQN)
	set := func(fid uint8, v uint32) nvme.Status {
		return a.exec(nvme.Feature{FID: fid, Value: v}.SetCommand(0, 0), nil).Status
	}
	get := func(fid uint8, sel uint8) uint32 {
		rc := a.exec(nvme.Feature{FID: fid, SEL: sel}.GetCommand(0, 0), nil)
		wantStatus(t, nvme.FeatureName(fid), rc.Status, nvme.StatusSuccess)
		return rc.DW0
	}
	wantStatus(t, "VWC off", set(nvme.FeatVolatileWC, 0), nvme.StatusSuccess)
	if get(nvme.FeatVolatileWC, nvme.FeatureSelCurrent) != 0 || get(nvme.FeatVolatileWC, nvme.FeatureSelDefault) != 1 {
		t.Error("Volatile Write Cache not as set")
	}
	wantStatus(t, "AEC", set(nvme.FeatAsyncEvent, 0xFFFFFFFF), nvme.StatusSuccess)
	if v := get(nvme.FeatAsyncEvent, nvme.FeatureSelCurrent); v != nvme.AECSMARTMask|nvme.AECNSAttr {
		t.Errorf("AEC %#x", v)
	}
	if get(nvme.FeatArbitration, nvme.FeatureSelSupported)&featChangeable == 0 {
		t.Error("Arbitration not changeable")
	}
	rc := a.exec(nvme.Feature{FID: nvme.FeatHostID, Value: 1}.GetCommand(0, 0), nil)
	rc = a.exec(nvme.Command{Opcode: nvme.AdminGetFeatures, Flags: nvme.FlagSGL, CDW10: uint32(nvme.FeatHostID), CDW11: 1, DPTR: a.keyed(0, 16)}, nil)
	if !rc.Status.Success() || a.data.Bytes()[0] != 1 {
		t.Errorf("Host Identifier %x (%v)", a.data.Bytes()[:16], rc.Status)
	}
	for _, lid := range []uint8{nvme.LogErrorInfo, nvme.LogSMART, nvme.LogFirmwareSlot, nvme.LogChangedNSList, nvme.LogCmdEffects} {
		rc := a.exec(nvme.GetLogPage{LID: lid, NUMD: nvme.NUMDFor(512)}.Command(0, nvme.NSIDAll, a.keyed(0, 512)), nil)
		wantStatus(t, nvme.LogName(lid), rc.Status, nvme.StatusSuccess)
	}
	cc := nvme.CC{EN: true, IOSQES: 6, IOCQES: 4, SHN: nvme.SHNNormal}
	wantStatus(t, "CC.SHN", a.propSet(nvme.PropCC, cc.Uint32()), nvme.StatusSuccess)
	v, _ := a.propGet(nvme.PropCSTS)
	if nvme.ParseCSTS(uint32(v)).SHST != nvme.SHSTComplete {
		t.Errorf("CSTS %#x after shutdown", v)
	}
	rc = a.exec(nvme.Identify{CNS: nvme.CNSController}.Command(0, 0, a.keyed(0, nvme.IdentifyLen)), nil)
	wantStatus(t, "Identify after shutdown", rc.Status, nvme.StatusCommandSequenceError)
}

// TestCloseBounded: Close returns while hosts hold connections and say
// nothing, and their queues see the end.
func TestCloseBounded(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	a, cntlid := admin(t, tt.addr, testNQN)
	q := ioQueue(t, tt.addr, 1, cntlid)
	silent := mustDial(t, tt.addr, 0, nil)
	done := make(chan error, 1)
	go func() { done <- tt.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
	for _, h := range []*rawHost{a, q, silent} {
		wantGone(t, h, "a queue after Close")
	}
	if err := tt.Close(); err != ErrClosed {
		t.Errorf("second Close: %v", err)
	}
}
