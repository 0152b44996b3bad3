package iwarp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/goiwarp/iwarp"
)

// Memory windows end to end over loopback (docs/memory-windows.md): b owns
// the memory, a is the peer that reaches it through b's windows.

// mwParent registers an 8-byte aligned region of n bytes on ep with
// rights acc, its bytes 0..n-1 = i%251.
func mwParent(t *testing.T, ep *endpoint, n int, acc iwarp.Access) *iwarp.MR {
	t.Helper()
	words := make([]uint64, n/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
	for i := range buf {
		buf[i] = byte(i % 251)
	}
	mr, err := ep.pd.RegisterMemory(buf, acc)
	if err != nil {
		t.Fatal(err)
	}
	return mr
}

const mwParentAccess = iwarp.AccessLocalWrite | iwarp.AccessMWBind

// mwWrite writes data to remote from a's side (handed to TCP).
func mwWrite(t *testing.T, ctx context.Context, a *endpoint, remote iwarp.RemoteBuffer, data []byte) {
	t.Helper()
	src, err := a.pd.RegisterMemory(append([]byte(nil), data...), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Write(ctx, remote, src.SGE(0, len(data))); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// mwRead reads n bytes at remote into a fresh buffer of a.
func mwRead(ctx context.Context, a *endpoint, remote iwarp.RemoteBuffer, n int) ([]byte, error) {
	sink, err := a.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	err = a.qp.Read(ctx, remote, sink.SGE(0, n))
	return sink.Bytes(), err
}

// TestMWType1BindAndAccess: a type 1 window bound by a call over a region
// that grants the peer nothing by itself: Write, Read and FetchAdd through
// the window land in the parent's range, and nowhere else.
func TestMWType1BindAndAccess(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	parent := mwParent(t, b, 4096, mwParentAccess)
	before := append([]byte(nil), parent.Bytes()...)
	mw, err := b.pd.AllocMW(iwarp.WindowType1)
	if err != nil {
		t.Fatal(err)
	}
	if mw.Bound() || mw.Type() != iwarp.WindowType1 || mw.Remote().Len != 0 {
		t.Fatalf("new window: bound %v type %v remote %+v", mw.Bound(), mw.Type(), mw.Remote())
	}
	old := mw.STag()
	rb, err := mw.Bind(ctx, parent, 1024, 64, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite|iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	if rb.STag == old || rb.STag != mw.STag() || rb.TO != parent.TO()+1024 || rb.Len != 64 || !mw.Bound() || mw.Remote() != rb {
		t.Fatalf("bound %+v, window STag %#x (was %#x), Remote %+v", rb, mw.STag(), old, mw.Remote())
	}
	data := bytes.Repeat([]byte{0xEE}, 56)
	mwWrite(t, ctx, a, rb, data)
	got, err := mwRead(ctx, a, rb, 64)
	if err != nil || !bytes.Equal(got[:56], data) || !bytes.Equal(got[56:], before[1024+56:1024+64]) {
		t.Fatalf("Read through the window: %v % x", err, got)
	}
	word, _ := rb.Slice(56, 8)
	orig, err := a.qp.FetchAdd(ctx, word, 5)
	if err != nil || orig != binary.NativeEndian.Uint64(before[1080:1088]) {
		t.Fatalf("FetchAdd: %#x %v", orig, err)
	}
	if _, err := mwRead(ctx, a, rb, 8); err != nil { // orders the check after the FetchAdd's placement
		t.Fatal(err)
	}
	want := append([]byte(nil), before...)
	copy(want[1024:], data)
	binary.NativeEndian.PutUint64(want[1080:], binary.NativeEndian.Uint64(before[1080:1088])+5)
	if !bytes.Equal(parent.Bytes(), want) {
		t.Fatal("the parent's bytes are not the window's accesses exactly")
	}
	if b.qp.Err() != nil || a.qp.Err() != nil {
		t.Fatalf("QP errors %v, %v", a.qp.Err(), b.qp.Err())
	}
}

// mwAttack is a misuse of a window by the peer and the Terminate the
// owner's QP sends for it.
type mwAttack struct {
	name string
	// setup binds (or not) the window on b and returns what a names.
	setup  func(t *testing.T, ctx context.Context, b *endpoint, parent *iwarp.MR) iwarp.RemoteBuffer
	attack func(ctx context.Context, a *endpoint, rb iwarp.RemoteBuffer) error
	code   iwarp.TermCode
}

func bindType1(acc iwarp.Access) func(t *testing.T, ctx context.Context, b *endpoint, parent *iwarp.MR) iwarp.RemoteBuffer {
	return func(t *testing.T, ctx context.Context, b *endpoint, parent *iwarp.MR) iwarp.RemoteBuffer {
		t.Helper()
		mw, err := b.pd.AllocMW(iwarp.WindowType1)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := mw.Bind(ctx, parent, 1024, 64, acc)
		if err != nil {
			t.Fatal(err)
		}
		return rb
	}
}

func attackWrite(off uint64, n int) func(ctx context.Context, a *endpoint, rb iwarp.RemoteBuffer) error {
	return func(ctx context.Context, a *endpoint, rb iwarp.RemoteBuffer) error {
		src, _ := a.pd.RegisterMemory(bytes.Repeat([]byte{0x77}, n), 0)
		rb.TO += off
		return a.qp.Write(ctx, rb, src.SGE(0, n))
	}
}

func attackRead(off uint64, n int) func(ctx context.Context, a *endpoint, rb iwarp.RemoteBuffer) error {
	return func(ctx context.Context, a *endpoint, rb iwarp.RemoteBuffer) error {
		rb.TO += off
		_, err := mwRead(ctx, a, rb, n)
		return err
	}
}

func attackFetchAdd(off uint64) func(ctx context.Context, a *endpoint, rb iwarp.RemoteBuffer) error {
	return func(ctx context.Context, a *endpoint, rb iwarp.RemoteBuffer) error {
		rb.TO += off
		_, err := a.qp.FetchAdd(ctx, rb, 1)
		return err
	}
}

const rwa = iwarp.AccessRemoteRead | iwarp.AccessRemoteWrite | iwarp.AccessRemoteAtomic

// TestMWPeerMisuse: every misuse of a window by the peer gets the RFC's
// Terminate from the owner's QP (RFC 5041 §7.2 for tagged Writes, RFC
// 5040 §7.1 for Read Requests, RFC 7306 for atomics), the peer's QP
// reports it received, and no byte of the parent outside the accesses
// allowed changes.
func TestMWPeerMisuse(t *testing.T) {
	rebound := func(t *testing.T, ctx context.Context, b *endpoint, parent *iwarp.MR) iwarp.RemoteBuffer {
		mw, _ := b.pd.AllocMW(iwarp.WindowType1)
		rb, err := mw.Bind(ctx, parent, 1024, 64, rwa)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mw.Bind(ctx, parent, 1024, 64, rwa); err != nil {
			t.Fatal(err)
		}
		return rb // the old STag
	}
	unbound := func(t *testing.T, ctx context.Context, b *endpoint, parent *iwarp.MR) iwarp.RemoteBuffer {
		mw, _ := b.pd.AllocMW(iwarp.WindowType1)
		rb, err := mw.Bind(ctx, parent, 1024, 64, rwa)
		if err != nil {
			t.Fatal(err)
		}
		if err := mw.Unbind(ctx); err != nil {
			t.Fatal(err)
		}
		return rb
	}
	never := func(t *testing.T, ctx context.Context, b *endpoint, parent *iwarp.MR) iwarp.RemoteBuffer {
		mw, _ := b.pd.AllocMW(iwarp.WindowType2)
		return iwarp.RemoteBuffer{STag: mw.STag(), TO: parent.TO() + 1024, Len: 64}
	}
	otherPD := func(t *testing.T, ctx context.Context, b *endpoint, _ *iwarp.MR) iwarp.RemoteBuffer {
		pd, _ := b.dev.AllocPD()
		parent, _ := pd.RegisterMemory(make([]byte, 4096), mwParentAccess)
		mw, _ := pd.AllocMW(iwarp.WindowType1)
		rb, err := mw.Bind(ctx, parent, 1024, 64, rwa)
		if err != nil {
			t.Fatal(err)
		}
		return rb
	}
	rekeyed := func(t *testing.T, ctx context.Context, b *endpoint, parent *iwarp.MR) iwarp.RemoteBuffer {
		rb := bindType1(rwa)(t, ctx, b, parent)
		if _, err := parent.Rekey(ctx, mwParentAccess); err != nil {
			t.Fatal(err)
		}
		return rb
	}
	deregistered := func(t *testing.T, ctx context.Context, b *endpoint, parent *iwarp.MR) iwarp.RemoteBuffer {
		rb := bindType1(rwa)(t, ctx, b, parent)
		if err := parent.Deregister(ctx); err != nil {
			t.Fatal(err)
		}
		return rb
	}
	deallocated := func(t *testing.T, ctx context.Context, b *endpoint, parent *iwarp.MR) iwarp.RemoteBuffer {
		mw, _ := b.pd.AllocMW(iwarp.WindowType1)
		rb, err := mw.Bind(ctx, parent, 1024, 64, rwa)
		if err != nil {
			t.Fatal(err)
		}
		if err := mw.Dealloc(ctx); err != nil {
			t.Fatal(err)
		}
		if err := mw.Dealloc(ctx); !errors.Is(err, iwarp.ErrMWDeallocated) {
			t.Fatalf("second Dealloc: %v", err)
		}
		if _, err := mw.Bind(ctx, parent, 0, 8, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrMWDeallocated) {
			t.Fatalf("Bind after Dealloc: %v", err)
		}
		return rb
	}
	for _, c := range []mwAttack{
		{"Write-past-window-end", bindType1(rwa), attackWrite(56, 16), iwarp.TermDDPBaseBounds},
		{"Write-before-window", bindType1(rwa), attackWrite(^uint64(7), 16), iwarp.TermDDPBaseBounds},
		{"Read-past-window-end", bindType1(rwa), attackRead(32, 64), iwarp.TermRDMAPBaseBounds},
		{"FetchAdd-past-window-end", bindType1(rwa), attackFetchAdd(64), iwarp.TermRDMAPBaseBounds},
		{"Write-read-only-window", bindType1(iwarp.AccessRemoteRead), attackWrite(0, 8), iwarp.TermDDPInvalidSTag},
		{"Read-write-only-window", bindType1(iwarp.AccessRemoteWrite), attackRead(0, 8), iwarp.TermRDMAPAccessRights},
		{"FetchAdd-without-atomic-right", bindType1(iwarp.AccessRemoteRead | iwarp.AccessRemoteWrite), attackFetchAdd(0), iwarp.TermRDMAPAccessRights},
		{"Write-old-STag-after-rebind", rebound, attackWrite(0, 8), iwarp.TermDDPInvalidSTag},
		{"Read-old-STag-after-rebind", rebound, attackRead(0, 8), iwarp.TermRDMAPInvalidSTag},
		{"Write-after-Unbind", unbound, attackWrite(0, 8), iwarp.TermDDPInvalidSTag},
		{"Write-never-bound", never, attackWrite(0, 8), iwarp.TermDDPInvalidSTag},
		{"Write-other-PD-window", otherPD, attackWrite(0, 8), iwarp.TermDDPSTagNotAssoc},
		{"Write-after-parent-Rekey", rekeyed, attackWrite(0, 8), iwarp.TermDDPInvalidSTag},
		{"Read-after-parent-Deregister", deregistered, attackRead(0, 8), iwarp.TermRDMAPInvalidSTag},
		{"Write-after-Dealloc", deallocated, attackWrite(0, 8), iwarp.TermDDPInvalidSTag},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := connectPair(t, nil, nil)
			ctx := ctx10(t)
			parent := mwParent(t, b, 4096, mwParentAccess)
			before := append([]byte(nil), parent.Bytes()...)
			rb := c.setup(t, ctx, b, parent)
			_ = c.attack(ctx, a, rb) // a Write completes when handed to TCP; a Read or atomic fails
			wantTerminated(t, ctx, b, true, c.code)
			<-a.qp.Done()
			var te *iwarp.TerminateError
			if !errors.As(a.qp.Err(), &te) || te.Sent || te.Code != c.code {
				t.Fatalf("the peer's QP error %v, want the received Terminate %v", a.qp.Err(), c.code)
			}
			if !bytes.Equal(parent.Bytes(), before) {
				t.Fatal("a refused access changed the parent's bytes")
			}
		})
	}
}

// TestMWType2BindByWR: a type 2 window is bound by an OpBindWindow WR in
// send-queue order, used by the peer, invalidated by a Local Invalidate
// WR, and bound again; then its old STag fails.
func TestMWType2BindByWR(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	parent := mwParent(t, b, 4096, mwParentAccess)
	mw, err := b.pd.AllocMW(iwarp.WindowType2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.qp.PostSend(iwarp.SendWR{ID: 1, Op: iwarp.OpBindWindow, Flags: iwarp.Signaled, Window: mw.STag(),
		Access: iwarp.AccessRemoteWrite | iwarp.AccessRemoteRead, SGL: []iwarp.SGE{parent.SGE(256, 128)}}); err != nil {
		t.Fatal(err)
	}
	c, err := b.cq.Next(ctx)
	if err != nil || c.ID != 1 || c.Status != iwarp.StatusSuccess || c.Op != iwarp.OpBindWindow {
		t.Fatalf("bind completion %+v %v", c, err)
	}
	rb := mw.Remote()
	if !mw.Bound() || rb.TO != parent.TO()+256 || rb.Len != 128 {
		t.Fatalf("after the bind: bound %v, %+v", mw.Bound(), rb)
	}
	mwWrite(t, ctx, a, rb, []byte("through a type 2 window"))
	if got, err := mwRead(ctx, a, rb, 23); err != nil || string(got) != "through a type 2 window" {
		t.Fatalf("Read back %q %v", got, err)
	}
	if !bytes.Equal(parent.Bytes()[256:256+23], []byte("through a type 2 window")) {
		t.Fatal("the Write did not land in the parent's range")
	}
	// Bound type 2 windows must be invalidated before a rebind.
	_, err = b.qp.BindMW(ctx, mw, parent, 0, 64, iwarp.AccessRemoteRead)
	var we *iwarp.WRError
	if !errors.As(err, &we) || we.Status != iwarp.StatusLocalProtection || !errors.Is(err, iwarp.ErrMWBound) {
		t.Fatalf("rebind of a bound type 2 window: %v", err)
	}
	lc, err := b.qp.Do(ctx, iwarp.SendWR{Op: iwarp.OpLocalInvalidate, InvalidateSTag: rb.STag})
	if err != nil || lc.Status != iwarp.StatusSuccess || mw.Bound() {
		t.Fatalf("Local Invalidate of the window: %+v %v (bound %v)", lc, err, mw.Bound())
	}
	rb2, err := b.qp.BindMW(ctx, mw, parent, 512, 64, iwarp.AccessRemoteRead)
	if err != nil || rb2.STag == rb.STag || rb2.TO != parent.TO()+512 || rb2.Len != 64 {
		t.Fatalf("second bind %+v %v", rb2, err)
	}
	if got, err := mwRead(ctx, a, rb2, 64); err != nil || !bytes.Equal(got, parent.Bytes()[512:576]) {
		t.Fatalf("Read through the new binding: %v", err)
	}
	if b.qp.Err() != nil {
		t.Fatal(b.qp.Err())
	}
	_, _ = mwRead(ctx, a, rb, 8) // the old STag
	wantTerminated(t, ctx, b, true, iwarp.TermRDMAPInvalidSTag)
}

// TestMWBindErrors: the misuses of the owner: at post (ErrInvalidWR), at
// execution (StatusLocalProtection with the window sentinel, the QP stays
// in RTS), and by call.
func TestMWBindErrors(t *testing.T) {
	_, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	parent := mwParent(t, b, 4096, mwParentAccess)
	noBind := mwParent(t, b, 4096, iwarp.AccessLocalWrite)
	noLocalWrite := mwParent(t, b, 4096, iwarp.AccessMWBind)
	other, _ := b.dev.AllocPD()
	mw2, _ := b.pd.AllocMW(iwarp.WindowType2)
	mw1, _ := b.pd.AllocMW(iwarp.WindowType1)
	otherMW, _ := other.AllocMW(iwarp.WindowType2)
	otherParent, _ := other.RegisterMemory(make([]byte, 64), mwParentAccess)

	for _, c := range []struct {
		name string
		mw   *iwarp.MW
		mr   *iwarp.MR
		off  int
		n    int
		acc  iwarp.Access
		want error
	}{
		{"type-1-window", mw1, parent, 0, 64, iwarp.AccessRemoteRead, iwarp.ErrMWType},
		{"window-of-another-PD", otherMW, parent, 0, 64, iwarp.AccessRemoteRead, iwarp.ErrMWPD},
		{"region-without-MW-bind", mw2, noBind, 0, 64, iwarp.AccessRemoteRead, iwarp.ErrMWAccess},
		{"write-right-without-local-write", mw2, noLocalWrite, 0, 64, iwarp.AccessRemoteWrite, iwarp.ErrMWAccess},
		{"local-right", mw2, parent, 0, 64, iwarp.AccessLocalWrite, iwarp.ErrMWAccess},
		{"atomic-misaligned", mw2, parent, 4, 64, iwarp.AccessRemoteAtomic, iwarp.ErrMWAccess},
	} {
		_, err := b.qp.BindMW(ctx, c.mw, c.mr, c.off, c.n, c.acc)
		var we *iwarp.WRError
		if !errors.As(err, &we) || we.Status != iwarp.StatusLocalProtection || we.Op != iwarp.OpBindWindow || !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want StatusLocalProtection and %v", c.name, err, c.want)
		}
	}
	// At post: the WR's shape and its SGE.
	for _, c := range []struct {
		name string
		wr   iwarp.SendWR
	}{
		{"range-outside-region", iwarp.SendWR{Op: iwarp.OpBindWindow, Window: mw2.STag(), Access: iwarp.AccessRemoteRead, SGL: []iwarp.SGE{parent.SGE(4000, 200)}}},
		{"zero-length", iwarp.SendWR{Op: iwarp.OpBindWindow, Window: mw2.STag(), Access: iwarp.AccessRemoteRead, SGL: []iwarp.SGE{parent.SGE(0, 0)}}},
		{"two-SGEs", iwarp.SendWR{Op: iwarp.OpBindWindow, Window: mw2.STag(), SGL: []iwarp.SGE{parent.SGE(0, 8), parent.SGE(8, 8)}}},
		{"no-SGE", iwarp.SendWR{Op: iwarp.OpBindWindow, Window: mw2.STag()}},
		{"region-of-another-PD", iwarp.SendWR{Op: iwarp.OpBindWindow, Window: mw2.STag(), SGL: []iwarp.SGE{otherParent.SGE(0, 8)}}},
		{"not-a-window", iwarp.SendWR{Op: iwarp.OpBindWindow, Window: parent.STag(), SGL: []iwarp.SGE{parent.SGE(0, 8)}}},
		{"window-as-SGE", iwarp.SendWR{Op: iwarp.OpBindWindow, Window: mw2.STag(), SGL: []iwarp.SGE{{STag: mw1.STag(), Length: 8}}}},
		{"with-flags", iwarp.SendWR{Op: iwarp.OpBindWindow, Flags: iwarp.Solicited, Window: mw2.STag(), SGL: []iwarp.SGE{parent.SGE(0, 8)}}},
	} {
		if err := b.qp.PostSend(c.wr); !errors.Is(err, iwarp.ErrInvalidWR) {
			t.Errorf("%s: post %v, want ErrInvalidWR", c.name, err)
		}
	}
	// A stale STag: the window was bound since the WR's STag was read.
	stale := mw2.STag()
	if _, err := b.qp.BindMW(ctx, mw2, parent, 0, 64, iwarp.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	if _, err := b.qp.Do(ctx, iwarp.SendWR{Op: iwarp.OpLocalInvalidate, InvalidateSTag: mw2.STag()}); err != nil {
		t.Fatal(err)
	}
	c, err := b.qp.Do(ctx, iwarp.SendWR{Op: iwarp.OpBindWindow, Window: stale, Access: iwarp.AccessRemoteRead, SGL: []iwarp.SGE{parent.SGE(0, 8)}})
	if err != nil || c.Status != iwarp.StatusLocalProtection || !errors.Is(c.Err, iwarp.ErrMWSTag) {
		t.Fatalf("bind by a stale STag: %+v %v", c, err)
	}
	// A type 1 window cannot be invalidated locally.
	if _, err := mw1.Bind(ctx, parent, 0, 64, iwarp.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	c, err = b.qp.Do(ctx, iwarp.SendWR{Op: iwarp.OpLocalInvalidate, InvalidateSTag: mw1.STag()})
	if err != nil || c.Status != iwarp.StatusLocalProtection || !mw1.Bound() {
		t.Fatalf("Local Invalidate of a type 1 window: %+v %v (bound %v)", c, err, mw1.Bound())
	}
	// The calls.
	if _, err := b.pd.AllocMW(3); !errors.Is(err, iwarp.ErrMWType) {
		t.Errorf("AllocMW(3): %v", err)
	}
	if _, err := mw2.Bind(ctx, parent, 0, 64, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrMWType) {
		t.Errorf("Bind of a type 2 window by call: %v", err)
	}
	if _, err := mw1.Bind(ctx, parent, 4090, 64, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrRange) {
		t.Errorf("Bind outside the region: %v", err)
	}
	if _, err := mw1.Bind(ctx, noBind, 0, 64, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrMWAccess) {
		t.Errorf("Bind to a region without AccessMWBind: %v", err)
	}
	if _, err := mw1.Bind(ctx, otherParent, 0, 64, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrMWPD) {
		t.Errorf("Bind to a region of another PD: %v", err)
	}
	dead := mwParent(t, b, 64, mwParentAccess)
	_ = dead.Deregister(ctx)
	if _, err := mw1.Bind(ctx, dead, 0, 64, iwarp.AccessRemoteRead); !errors.Is(err, iwarp.ErrMWRegion) {
		t.Errorf("Bind to a deregistered region: %v", err)
	}
	if rb, err := mw1.Bind(ctx, parent, 0, 0, iwarp.AccessRemoteRead); err != nil || mw1.Bound() || rb.Len != 0 {
		t.Errorf("zero-length Bind (unbind): %+v %v, bound %v", rb, err, mw1.Bound())
	}
	if b.qp.Err() != nil || b.qp.State() != iwarp.StateRTS {
		t.Fatalf("the QP left RTS: %v", b.qp.Err())
	}
}

// TestMWRemoteInvalidate: the peer's Send with Invalidate naming a type 2
// window bound with AccessRemoteInvalidate unbinds it (the receive
// completion reports the STag); without that right, or for a type 1
// window, the owner refuses it with Terminate RDMAP/1/0x09 (RFC 5040
// §7.1, "STag cannot be invalidated") and the window stays bound.
func TestMWRemoteInvalidate(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  iwarp.WindowType
		acc  iwarp.Access
		ok   bool
	}{
		{"type-2-with-right", iwarp.WindowType2, iwarp.AccessRemoteWrite | iwarp.AccessRemoteInvalidate, true},
		{"type-2-without-right", iwarp.WindowType2, iwarp.AccessRemoteWrite, false},
		{"type-1", iwarp.WindowType1, iwarp.AccessRemoteWrite, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := connectPair(t, nil, nil)
			ctx := ctx10(t)
			parent := mwParent(t, b, 4096, mwParentAccess)
			mw, _ := b.pd.AllocMW(c.typ)
			var rb iwarp.RemoteBuffer
			var err error
			if c.typ == iwarp.WindowType1 {
				rb, err = mw.Bind(ctx, parent, 0, 64, c.acc)
			} else {
				rb, err = b.qp.BindMW(ctx, mw, parent, 0, 64, c.acc)
			}
			if err != nil {
				t.Fatal(err)
			}
			recv, _ := b.pd.RegisterMemory(make([]byte, 16), iwarp.AccessLocalWrite)
			if err := b.qp.PostRecv(iwarp.RecvWR{ID: 7, SGL: []iwarp.SGE{recv.SGE(0, 16)}}); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostSend(iwarp.SendWR{ID: 2, Op: iwarp.OpSend, Flags: iwarp.Invalidate, InvalidateSTag: rb.STag}); err != nil {
				t.Fatal(err)
			}
			if !c.ok {
				wantTerminated(t, ctx, b, true, iwarp.TermRDMAPProtInvalidate)
				if !mw.Bound() {
					t.Fatal("a refused invalidation unbound the window")
				}
				return
			}
			rc, err := b.cq.Next(ctx)
			if err != nil || rc.ID != 7 || rc.Invalidated != rb.STag || rc.Status != iwarp.StatusSuccess {
				t.Fatalf("receive completion %+v %v", rc, err)
			}
			if mw.Bound() {
				t.Fatal("the window is still bound")
			}
			mwWrite(t, ctx, a, rb, []byte("late"))
			wantTerminated(t, ctx, b, true, iwarp.TermDDPInvalidSTag)
			if bytes.Contains(parent.Bytes(), []byte("late")) {
				t.Fatal("a Write through the invalidated window landed")
			}
		})
	}
}

// TestMWParentEndsWindows: re-keying or deregistering the parent unbinds
// its windows at once (MW.Bound turns false).
func TestMWParentEndsWindows(t *testing.T) {
	_, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	parent := mwParent(t, b, 4096, mwParentAccess)
	w1, _ := b.pd.AllocMW(iwarp.WindowType1)
	w2, _ := b.pd.AllocMW(iwarp.WindowType2)
	if _, err := w1.Bind(ctx, parent, 0, 64, iwarp.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	if _, err := b.qp.BindMW(ctx, w2, parent, 64, 64, iwarp.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	if _, err := parent.Rekey(ctx, mwParentAccess); err != nil {
		t.Fatal(err)
	}
	if w1.Bound() || w2.Bound() {
		t.Fatal("Rekey left windows bound")
	}
	if _, err := w1.Bind(ctx, parent, 0, 64, iwarp.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	if _, err := b.qp.BindMW(ctx, w2, parent, 64, 64, iwarp.AccessRemoteRead); err != nil {
		t.Fatal(err) // an unbound type 2 window binds again
	}
	if err := parent.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	if w1.Bound() || w2.Bound() {
		t.Fatal("Deregister left windows bound")
	}
	if err := w1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMWUnbindRacesWrites: the peer writes through a type 1 window
// without pause while the owner unbinds it (or binds it again): once
// Unbind (or Bind) has returned, no byte lands in the parent through the
// old binding: the parent's bytes then are its bytes for good, though the
// peer's Writes go on until its QP is terminated. Run under -race.
func TestMWUnbindRacesWrites(t *testing.T) {
	for round := 0; round < 6; round++ {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			a, b := connectPair(t, nil, nil)
			ctx := ctx10(t)
			parent := mwParent(t, b, 1<<16, mwParentAccess)
			mw, _ := b.pd.AllocMW(iwarp.WindowType1)
			rb, err := mw.Bind(ctx, parent, 4096, 32<<10, iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			started := make(chan struct{})
			done := make(chan int)
			go func() {
				src, _ := a.pd.RegisterMemory(make([]byte, 32<<10), 0)
				n := 0
				for ; ; n++ {
					for i := range src.Bytes() {
						src.Bytes()[i] = byte(n + 1)
					}
					if a.qp.Write(ctx, rb, src.SGE(0, 32<<10)) != nil {
						break
					}
					if n == 3 {
						close(started)
					}
				}
				if n <= 3 {
					close(started)
				}
				done <- n
			}()
			<-started
			if round%2 == 0 {
				err = mw.Unbind(ctx)
			} else {
				_, err = mw.Bind(ctx, parent, 4096, 32<<10, iwarp.AccessRemoteWrite)
			}
			if err != nil {
				t.Fatal(err)
			}
			snap := append([]byte(nil), parent.Bytes()...)
			<-b.qp.Done() // the peer's next Write through the old STag is refused
			n := <-done
			if !bytes.Equal(parent.Bytes(), snap) {
				t.Fatalf("bytes landed in the parent after the window was unbound (%d Writes)", n)
			}
			var te *iwarp.TerminateError
			if !errors.As(b.qp.Err(), &te) || te.Code != iwarp.TermDDPInvalidSTag {
				t.Fatalf("owner's QP: %v", b.qp.Err())
			}
		})
	}
}
