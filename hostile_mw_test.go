package iwarp_test

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp"
)

// appendWindows sets up the memory windows the hostile-peer suite's window
// cases aim at (internal/conform's window slots) and appends their
// advertisement to advert: over a canaried region of 16 KiB with every
// remote right and AccessMWBind, a bound type 2 window with remote read,
// write and atomic (no remote invalidate), a type 1 window with remote read
// only, the old STag of a type 1 window bound again, and the STag of a type
// 2 window never bound. Each window is 64 bytes at 4 KiB into the region,
// so the bytes around it are the region's. The type 2 bind goes through a
// QP of the responder's PD on a throwaway loopback connection, closed once
// the window is bound (a window belongs to its PD, not to a QP).
func (h *hostileResponder) appendWindows(t *testing.T, advert []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	parent, err := h.pd.RegisterMemory(h.canaried(16<<10), iwarp.AccessLocalWrite|iwarp.AccessMWBind|rwa)
	if err != nil {
		t.Fatal(err)
	}
	alloc := func(typ iwarp.WindowType) *iwarp.MW {
		mw, err := h.pd.AllocMW(typ)
		if err != nil {
			t.Fatal(err)
		}
		return mw
	}

	cq, err := h.dev.NewCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := h.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 4, RecvQueueDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	other := newEndpoint(t)
	connect(t, other, &endpoint{dev: h.dev, pd: h.pd, cq: cq, qp: qp}, nil, nil)
	w2 := alloc(iwarp.WindowType2)
	win, err := qp.BindMW(ctx, w2, parent, 4096, 64, rwa)
	if err != nil {
		t.Fatal(err)
	}
	qp.Close()
	other.qp.Close()
	<-qp.Done()
	<-other.qp.Done()
	if !w2.Bound() {
		t.Fatal("closing the QP unbound the type 2 window")
	}

	ro, err := alloc(iwarp.WindowType1).Bind(ctx, parent, 4096, 64, iwarp.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	rebound := alloc(iwarp.WindowType1)
	stale, err := rebound.Bind(ctx, parent, 4096, 64, rwa)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rebound.Bind(ctx, parent, 8192, 64, rwa); err != nil {
		t.Fatal(err)
	}
	unbound := iwarp.RemoteBuffer{STag: alloc(iwarp.WindowType2).STag(), TO: parent.TO() + 4096, Len: 64}
	for _, r := range []iwarp.RemoteBuffer{win, ro, stale, unbound} {
		advert, _ = r.AppendBinary(advert)
	}
	return advert
}

// canaried returns n zeroed bytes, 8-byte aligned, between two guard
// zones of hostileCanary octets that canariesIntact checks.
func (h *hostileResponder) canaried(n int) []byte {
	words := make([]uint64, (n+2*h.guard)/8)
	all := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n+2*h.guard)
	for i := range all {
		all[i] = hostileCanary
	}
	region := all[h.guard : h.guard+n]
	clear(region)
	h.zones = append(h.zones, all)
	return region
}
