package main

import (
	"context"
	"time"

	"github.com/goiwarp/iwarp"
)

// windowAccess is the rights of the served type 2 window: remote read,
// write and atomic, no remote invalidate.
const windowAccess = iwarp.AccessRemoteRead | iwarp.AccessRemoteWrite | iwarp.AccessRemoteAtomic

// appendWindows sets up the memory windows of the conform suite's window
// cases and appends their advertisement to s.advert (the slots after the
// regions', in internal/conform's order): over a guarded region of 16 KiB
// with every remote right and AccessMWBind, a bound type 2 window with
// remote read, write and atomic; a type 1 window with remote read only; the
// old STag of a type 1 window bound again; and the STag of a type 2 window
// never bound. Each window is 64 bytes at 4 KiB into the region. The type 2
// bind goes through a QP of the served PD on a loopback connection to a
// Listener of its own (Dial and Serve), closed once the window is bound: a
// window belongs to its PD, not to a QP.
func (s *server) appendWindows(guard int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	region, g := newGuarded(16<<10, guard)
	s.zones = append(s.zones, g)
	parent, err := s.pd.RegisterMemory(region, iwarp.AccessLocalWrite|iwarp.AccessMWBind|windowAccess)
	if err != nil {
		return err
	}
	var windows [4]*iwarp.MW
	for i, typ := range []iwarp.WindowType{iwarp.WindowType2, iwarp.WindowType1, iwarp.WindowType1, iwarp.WindowType2} {
		if windows[i], err = s.pd.AllocMW(typ); err != nil {
			return err
		}
	}
	win, err := s.bindType2(ctx, windows[0], parent)
	if err != nil {
		return err
	}
	ro, err := windows[1].Bind(ctx, parent, 4096, 64, iwarp.AccessRemoteRead)
	if err != nil {
		return err
	}
	stale, err := windows[2].Bind(ctx, parent, 4096, 64, windowAccess)
	if err != nil {
		return err
	}
	if _, err := windows[2].Bind(ctx, parent, 8192, 64, windowAccess); err != nil {
		return err
	}
	unbound := iwarp.RemoteBuffer{STag: windows[3].STag(), TO: parent.TO() + 4096, Len: 64}
	for _, r := range []iwarp.RemoteBuffer{win, ro, stale, unbound} {
		s.advert, _ = r.AppendBinary(s.advert)
	}
	return nil
}

// bindType2 binds the type 2 window mw to 64 bytes at 4 KiB into parent
// with a bind work request on a loopback QP of the served PD.
func (s *server) bindType2(ctx context.Context, mw *iwarp.MW, parent *iwarp.MR) (iwarp.RemoteBuffer, error) {
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		return iwarp.RemoteBuffer{}, err
	}
	defer ln.Close()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ln.Serve(sctx, nil) }()
	defer func() {
		stop()
		<-served
	}()
	qp, err := iwarp.Dial(ctx, ln.Addr().String(), &iwarp.DialConfig{PD: s.pd})
	if err != nil {
		return iwarp.RemoteBuffer{}, err
	}
	defer qp.Close()
	return qp.BindMW(ctx, mw, parent, 4096, 64, windowAccess)
}
