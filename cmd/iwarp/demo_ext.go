package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goiwarp/iwarp"
)

// The demo's invalidation, solicited-event and shared-receive-queue steps
// (docs/verbs.md §3 and §4).

// demoSendInvalidate sends n bytes with Send with Invalidate (RFC 5040
// §5.3): the receiver invalidates the named STag of its own region once the
// message is placed and reports it in the receive completion.
func demoSendInvalidate(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	exposed, err := to.pd.RegisterMemory(make([]byte, 64), iwarp.AccessRemoteWrite|iwarp.AccessRemoteInvalidate)
	if err != nil {
		return 0, err
	}
	defer exposed.Deregister(ctx)
	t, err := newTransfer(from.pd, to.pd, n, 0, iwarp.AccessLocalWrite, 0x77)
	if err != nil {
		return 0, err
	}
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 7, SGL: []iwarp.SGE{t.dst.SGE(0, n)}}); err != nil {
		t.close(ctx)
		return 0, err
	}
	stag := exposed.STag()
	return t.run(ctx, func() error {
		if _, err := from.qp.Do(ctx, iwarp.SendWR{Op: iwarp.OpSend, Flags: iwarp.Invalidate, InvalidateSTag: stag, SGL: []iwarp.SGE{t.src.SGE(0, n)}}); err != nil {
			return err
		}
		c, err := nextRecv(ctx, to, n, nil)
		switch {
		case err != nil:
			return err
		case c.Invalidated != stag:
			return fmt.Errorf("the receive completion reports STag %#x invalidated, want %#x", c.Invalidated, stag)
		case exposed.Valid():
			return fmt.Errorf("STag %#x is still valid", stag)
		}
		return nil
	})
}

// demoLocalInvalidate invalidates a region's STag with a Local Invalidate
// work request (timed), then gives it a new STag with Rekey and reads it
// through the new one: the data and the STags are verified.
func demoLocalInvalidate(e *demoEnv) (time.Duration, error) {
	const n = 256
	t, err := newTransfer(e.resp.pd, e.init.pd, n, iwarp.AccessRemoteRead, iwarp.AccessLocalWrite, 0x88)
	if err != nil {
		return 0, err
	}
	defer t.close(e.ctx)
	old := t.src.STag()
	start := time.Now()
	c, err := e.resp.qp.Do(e.ctx, iwarp.SendWR{Op: iwarp.OpLocalInvalidate, InvalidateSTag: old})
	d := time.Since(start)
	switch {
	case err != nil:
		return d, err
	case c.Status != iwarp.StatusSuccess:
		return d, fmt.Errorf("the Local Invalidate completed %v: %v", c.Status, c.Err)
	case t.src.Valid():
		return d, fmt.Errorf("STag %#x is still valid", old)
	}
	fresh, err := t.src.Rekey(e.ctx, iwarp.AccessRemoteRead)
	if err != nil {
		return d, err
	}
	if fresh == old || !t.src.Valid() {
		return d, fmt.Errorf("after Rekey: STag %#x (was %#x), valid %v", fresh, old, t.src.Valid())
	}
	remote, err := t.src.RemoteSlice(0, n)
	if err != nil {
		return d, err
	}
	if err := e.init.qp.Read(e.ctx, remote, t.dst.SGE(0, n)); err != nil {
		return d, fmt.Errorf("the Read through the new STag: %w", err)
	}
	return d, t.verify()
}

// demoReadInvalidate reads n bytes with RDMA Read with Invalidate: the
// sink's STag is invalidated once the data is placed.
func demoReadInvalidate(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	t, err := newTransfer(to.pd, from.pd, n, iwarp.AccessRemoteRead, iwarp.AccessLocalWrite, 0x99)
	if err != nil {
		return 0, err
	}
	remote, err := t.src.RemoteSlice(0, n)
	if err != nil {
		t.close(ctx)
		return 0, err
	}
	return t.run(ctx, func() error {
		c, err := from.qp.Do(ctx, iwarp.SendWR{Op: iwarp.OpRead, Flags: iwarp.Invalidate, SGL: []iwarp.SGE{t.dst.SGE(0, n)}, Remote: remote})
		switch {
		case err != nil:
			return err
		case c.Status != iwarp.StatusSuccess:
			return fmt.Errorf("the Read with Invalidate completed %v: %v", c.Status, c.Err)
		case t.dst.Valid():
			return fmt.Errorf("the sink's STag %#x is still valid", t.dst.STag())
		}
		return nil
	})
}

// demoSolicited arms the responder's CQ for solicited completions only
// (CQ.Arm(iwarp.NotifySolicited)) and sends a plain Send, which must not wake it, then a
// Send with Solicited Event, which must: the event channel names the CQ
// and the completion reports the solicited event.
func demoSolicited(e *demoEnv) (time.Duration, error) {
	note, err := e.resp.pd.RegisterMemory(make([]byte, 1), iwarp.AccessLocalWrite)
	if err != nil {
		return 0, err
	}
	defer note.Deregister(e.ctx)
	for id := uint64(10); id < 12; id++ {
		if err := e.resp.qp.PostRecv(iwarp.RecvWR{ID: id, SGL: []iwarp.SGE{note.SGE(0, 0)}}); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	e.resp.cq.Arm(iwarp.NotifySolicited)
	if err := e.init.qp.Send(e.ctx); err != nil {
		return time.Since(start), err
	}
	c, err := nextRecv(e.ctx, e.resp, 0, nil)
	if err != nil {
		return time.Since(start), err
	}
	if c.Solicited {
		return time.Since(start), fmt.Errorf("a plain Send completed as solicited")
	}
	if _, err := e.init.qp.Do(e.ctx, iwarp.SendWR{Op: iwarp.OpSend, Flags: iwarp.Solicited}); err != nil {
		return time.Since(start), err
	}
	cq, err := e.events.Wait(e.ctx)
	if err != nil {
		return time.Since(start), err
	}
	// The solicited completion is queued before the notification is sent:
	// an empty CQ here means something else (the plain Send) woke it.
	queued := e.resp.cq.Len()
	c, err = nextRecv(e.ctx, e.resp, 0, nil)
	d := time.Since(start)
	switch {
	case cq != e.resp.cq:
		return d, fmt.Errorf("the event channel woke for another CQ")
	case queued == 0:
		return d, fmt.Errorf("the CQ was woken before the solicited Send completed")
	case err != nil:
		return d, err
	case !c.Solicited:
		return d, fmt.Errorf("the Send with Solicited Event completed without it")
	}
	return d, nil
}

// demoSRQSends is the number of Sends of the shared-receive-queue step.
const demoSRQSends = 4

// demoSRQ connects two more QPs to responder QPs that draw their receives
// from one shared receive queue, and sends n bytes on each in turn: each
// Send takes the SRQ's oldest receive and completes on its own QP's CQ,
// and the SRQ limit event fires once fewer receives than the armed limit
// remain.
func demoSRQ(e *demoEnv, n int) (time.Duration, error) {
	srq, err := e.resp.pd.NewSRQ(&iwarp.SRQConfig{Depth: 8})
	if err != nil {
		return 0, err
	}
	var servers, clients [2]*demoSide
	for i := range servers {
		if servers[i], err = newDemoSide(e.resp.pd, nil, srq); err != nil {
			return 0, err
		}
		if clients[i], err = newDemoSide(e.init.pd, nil, nil); err != nil {
			return 0, err
		}
		defer servers[i].qp.Close()
		defer clients[i].qp.Close()
		if err := e.connect(clients[i], servers[i]); err != nil {
			return 0, err
		}
	}
	slot := max(n, 1)
	t, err := newTransfer(e.init.pd, e.resp.pd, demoSRQSends*slot, 0, iwarp.AccessLocalWrite, 0x5a)
	if err != nil {
		return 0, err
	}
	defer t.close(e.ctx)
	for i := range demoSRQSends {
		if err := srq.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{t.dst.SGE(i*slot, n)}}); err != nil {
			return 0, err
		}
	}
	srq.Arm(demoSRQSends - 1)
	start := time.Now()
	for i := range demoSRQSends {
		from, to := clients[i%2], servers[i%2]
		if err := from.qp.Send(e.ctx, t.src.SGE(i*slot, n)); err != nil {
			return time.Since(start), err
		}
		c, err := nextRecv(e.ctx, to, n, nil)
		if err != nil {
			return time.Since(start), err
		}
		if c.ID != uint64(i) || c.QPNum != to.qp.Num() {
			return time.Since(start), fmt.Errorf("the Send of message %d took receive %d, or completed on another QP's CQ", i, c.ID)
		}
	}
	d := time.Since(start)
	if posted := srq.Posted(); posted != 0 {
		return d, fmt.Errorf("%d receives left on the SRQ, want 0", posted)
	}
	if err := awaitSRQLimit(e, srq); err != nil {
		return d, err
	}
	for i := range demoSRQSends { // receive i holds Send i's bytes
		if !bytes.Equal(t.sbuf[i*slot:i*slot+n], t.dbuf[i*slot:i*slot+n]) {
			return d, fmt.Errorf("receive %d holds other bytes than Send %d", i, i)
		}
	}
	return d, nil
}

// awaitSRQLimit waits for srq's limit event on the Device's event channel,
// passing over the events of other objects.
func awaitSRQLimit(e *demoEnv, srq *iwarp.SRQ) error {
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	for {
		select {
		case ev := <-e.dev.Events():
			if ev.Type == iwarp.EventSRQLimit && ev.SRQ == srq {
				return nil
			}
		case <-ctx.Done():
			return errors.New("no SRQ limit event")
		}
	}
}
