package rdmap

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The completion ledger: every accepted WR completes exactly once, send
// completions in posting order (an unsignaled WR that succeeded has none:
// a later completion implies it), receive completions in the order the
// receives were taken; each status must have a cause, and a success must
// carry the right data.

// complete checks one completion.
func (s *simSide) complete(c *Completion) {
	w := s.w
	if c.ID == 0 || c.ID > uint64(len(s.wrs)) {
		w.failf("side %s: completion of unknown WR %d (%v, %v)", s.name, c.ID, c.Op, c.Status)
	}
	rec := s.wrs[c.ID-1]
	w.ev(s.idx, simEvComp, c.ID, uint64(c.Status)<<8|uint64(c.Queue))
	switch {
	case rec.seq < 0 || (rec.recv && (rec.seq >= len(s.rq) || s.rq[rec.seq] != rec)) || (!rec.recv && (rec.seq >= len(s.sq) || s.sq[rec.seq] != rec)):
		w.failf("side %s: completion of WR %d, which was never accepted", s.name, c.ID)
	case rec.done && rec.implicit:
		w.failf("side %s: WR %d (%v) completed with %v after a later send WR had completed", s.name, c.ID, rec.op, c.Status)
	case rec.done:
		w.failf("side %s: WR %d (%v) completed twice (now %v, before %v)", s.name, c.ID, rec.op, c.Status, rec.status)
	case rec.recv != (c.Queue != SendQueue):
		w.failf("side %s: WR %d completed on the wrong queue (%v)", s.name, c.ID, c.Queue)
	}
	if rec.recv {
		if rec.seq != s.rqDone {
			w.failf("side %s: receive %d completed before the receive posted before it (%d)", s.name, c.ID, s.rq[s.rqDone].id)
		}
		s.rqDone++
	} else {
		for i := s.sqDone; i < rec.seq; i++ {
			e := s.sq[i]
			if e.done {
				continue
			}
			if e.flags&rdma.Signaled != 0 {
				w.failf("side %s: send WR %d (%v) completed before the signaled WR %d (%v) posted before it", s.name, c.ID, rec.op, e.id, e.op)
			}
			s.succeeded(e, nil)
			e.implicit = true
		}
		s.sqDone = max(s.sqDone, rec.seq+1)
	}
	rec.done, rec.status = true, c.Status
	s.completed++
	w.cover.status[c.Status]++
	if rec.recv && s.srq != nil {
		w.cover.srqTaken++
	}
	if c.Status == rdma.StatusSuccess {
		if c.Err != nil {
			w.failf("side %s: WR %d succeeded with an error: %v", s.name, c.ID, c.Err)
		}
		s.succeeded(rec, c)
	} else {
		s.failed(rec, c)
	}
	rec.giveBack()
}

// succeeded checks a successful WR (c is nil for an unsignaled one whose
// success a later completion implied).
func (s *simSide) succeeded(rec *simWR, c *Completion) {
	w := s.w
	if c != nil && !rec.recv {
		if c.Op != rec.op || c.Signaled != (rec.flags&rdma.Signaled != 0) {
			w.failf("side %s: completion of WR %d says %v signaled=%v, posted as %v signaled=%v", s.name, rec.id, c.Op, c.Signaled, rec.op, rec.flags&rdma.Signaled != 0)
		}
		if want := rec.simWantLen(); c.Len != want {
			w.failf("side %s: %v WR %d completed with length %d, want %d", s.name, rec.op, rec.id, c.Len, want)
		}
	}
	rec.done, rec.status = true, rdma.StatusSuccess
	w.cover.ok[rec.op][rec.flags&simVariantFlags]++
	if !rec.recv && !outbound(rec.shape()) && rec.op != rdma.OpLocalInvalidate && !rec.sent && !s.mon.detached {
		// A Send or Write completes once handed to TCP (docs/semantics.md
		// rule 3): then its buffers are the application's again.
		w.failf("side %s: %v WR %d completed before its last octet was written", s.name, rec.op, rec.id)
	}
	switch {
	case rec.recv:
		s.receiveOK(rec, c)
	case atomic(rec.shape()):
		if !rec.expectSink {
			break
		}
		if c != nil && c.Original != rec.original {
			w.failf("side %s: %v WR %d found %#x at word %d, the model says %#x", s.name, rec.op, rec.id, c.Original, rec.atomWord, rec.original)
		}
		if len(rec.blocks) > 0 {
			b := rec.blocks[0]
			got := binary.NativeEndian.Uint64(b.g.bytes()[b.off:])
			if got != rec.original {
				w.failf("side %s: %v WR %d put %#x in its result buffer, the model says %#x", s.name, rec.op, rec.id, got, rec.original)
			}
		}
		s.proves(rec)
	case read(rec.shape()) || rec.op == rdma.OpReadV2:
		if ar := rec.atomRead; ar != nil {
			got := simGather(rec.segs, rec.n)
			for j := range ar.idx {
				v := binary.NativeEndian.Uint64(got[8*j:])
				if !s.peer.mem.atomReadOK(ar.word+j, ar.idx[j], v) {
					w.failf("side %s: %v WR %d read %#x from atomic word %d: not its value when the Read was posted (%#x) nor one a later Write gave (history %v)",
						s.name, rec.op, rec.id, v, ar.word+j, s.peer.mem.atomHist[ar.word+j][ar.idx[j]].v, s.peer.mem.atomHist[ar.word+j])
				}
			}
		}
		if rec.expectSink {
			got := simGather(rec.segs, rec.n)
			if !bytes.Equal(got, rec.payload) {
				i := simFirstDiff(got, rec.payload)
				w.failf("side %s: %v WR %d of %d octets: sink octet %d is %#x, the source had %#x", s.name, rec.op, rec.id, rec.n, i, got[i], rec.payload[i])
			}
		}
		s.proves(rec)
		if t := rec.invalidates; t != nil {
			s.invalidatedBy(t, rec.invSTag, "Read with Invalidate", rec.epoch)
		}
	case rec.op == rdma.OpLocalInvalidate:
		s.invalidatedBy(rec.invalidates, rec.invSTag, "Local Invalidate", rec.epoch)
	}
}

// simWantLen is a successful send WR's completion length.
func (rec *simWR) simWantLen() int {
	switch {
	case atomic(rec.shape()):
		return 8
	case rec.op == rdma.OpLocalInvalidate, immediate(rec.shape()):
		return 0
	}
	return rec.n
}

// invalidatedBy freezes a local region a completed invalidation ended
// (unless the application re-keyed it since the WR was posted: epoch).
func (s *simSide) invalidatedBy(t *simRegion, stag uint32, what string, epoch int) {
	if t == nil || t.epoch != epoch {
		return
	}
	if t.r.Valid() && stag != 0 && uint32(t.r.STag()) == stag {
		s.w.failf("side %s: %s of %#x completed but %s is still valid under it", s.name, what, stag, t.name)
	}
	if t.state == simRegValid && t.stag == stag {
		t.state, t.stag = simRegInvalid, 0
		t.old = append(t.old, stag)
	}
	t.freeze(what)
}

// simGather concatenates the first n octets an SGL names.
func simGather(sgl []Seg, n int) []byte {
	var b []byte
	for _, e := range sgl {
		b = append(b, e.Region.Bytes()[e.Off:e.Off+uint64(e.Len)]...)
	}
	if len(b) > n {
		b = b[:n]
	}
	return b
}

// receiveOK checks a successful receive against the peer's message that
// took it.
func (s *simSide) receiveOK(rec *simWR, c *Completion) {
	w := s.w
	k := rec.seq + 1
	peer := s.peer
	if w.hostileDone && w.cfg.victim == s.idx && k > w.hostile.consumers {
		return // a Send of the hostile input took it
	}
	if k > len(peer.consumers) {
		w.failf("side %s: receive %d (the %dth) completed with success, but the peer posted only %d messages that take a receive", s.name, rec.id, k, len(peer.consumers))
	}
	m := peer.consumers[k-1]
	if c.Op != rdma.OpRecv {
		w.failf("side %s: receive %d completed as %v", s.name, rec.id, c.Op)
	}
	mwr := m.shape()
	wantSE := m.flags&rdma.Solicited != 0 // Send, Immediate Data or Write with Immediate with SE
	wantInv := invalidates(mwr)
	wantImm := sendImm(mwr) || immediate(mwr) || writeImm(mwr)
	if c.Solicited != wantSE || (c.Invalidated != 0) != wantInv || c.HasImmediate != wantImm {
		w.failf("side %s: receive %d of the peer's %v WR %d (flags %#x) has solicited %v, invalidated %#x, immediate %v; want solicited %v, an invalidation %v, immediate %v",
			s.name, rec.id, m.op, m.id, m.flags, c.Solicited, c.Invalidated, c.HasImmediate, wantSE, wantInv, wantImm)
	}
	if wantImm && c.Immediate != m.imm {
		w.failf("side %s: receive %d of the peer's %v WR %d has immediate %#x, want %#x", s.name, rec.id, m.op, m.id, c.Immediate, m.imm)
	}
	if wantInv {
		if c.Invalidated != m.invSTag {
			w.failf("side %s: receive %d of the peer's %v WR %d invalidated %#x, want %#x", s.name, rec.id, m.op, m.id, c.Invalidated, m.invSTag)
		}
		if t := m.remoteInv; t != nil {
			s.invalidatedBy(t, m.invSTag, "remote invalidation", m.epoch)
		}
	}
	switch {
	case immediate(mwr) || writeImm(mwr):
		want := 0
		if rec.n >= wire.ImmediateDataLen {
			want = wire.ImmediateDataLen
			var v [8]byte
			binary.BigEndian.PutUint64(v[:], m.imm)
			if got := simGather(rec.segs, 8); !bytes.Equal(got, v[:]) {
				w.failf("side %s: receive %d of Immediate Data %#x holds % x", s.name, rec.id, m.imm, got)
			}
		}
		if c.Len != want {
			w.failf("side %s: receive %d of Immediate Data has length %d, want %d", s.name, rec.id, c.Len, want)
		}
	default:
		if c.Len != m.n {
			w.failf("side %s: receive %d of the peer's %d-octet %v WR %d has length %d", s.name, rec.id, m.n, m.op, m.id, c.Len)
		}
		if got := simGather(rec.segs, m.n); !bytes.Equal(got, m.payload) {
			i := simFirstDiff(got, m.payload)
			w.failf("side %s: receive %d of the peer's %v WR %d: octet %d is %#x, the peer sent %#x", s.name, rec.id, m.op, m.id, i, got[i], m.payload[i])
		}
	}
	peer.proves(m)
}

// proves is called when the peer has processed this side's WR rec (its
// receive completed, or its response arrived): every Write this side
// posted before rec has been placed (RFC 5040 §5.5), so its target must
// hold its payload.
func (s *simSide) proves(rec *simWR) {
	for _, e := range s.sq[:rec.seq] {
		if e.target == nil || e.verified {
			continue
		}
		e.verified = true
		t := e.target
		got := t.bytes()[e.targetOff : e.targetOff+e.n]
		if !bytes.Equal(got, e.payload) {
			i := simFirstDiff(got, e.payload)
			s.w.failf("side %s: the peer's %v WR %d (before WR %d) is not placed: target octet %d is %#x, want %#x", s.peer.name, e.op, e.id, rec.id, i, got[i], e.payload[i])
		}
	}
	if rec.target != nil && !rec.verified && writeImm(rec.shape()) {
		rec.verified = true
		got := rec.target.bytes()[rec.targetOff : rec.targetOff+rec.n]
		if !bytes.Equal(got, rec.payload) {
			s.w.failf("side %s: the Write of Write with Immediate WR %d is not placed when its receive completed", s.name, rec.id)
		}
	}
}

// failed checks that a WR's failure has a cause.
func (s *simSide) failed(rec *simWR, c *Completion) {
	w := s.w
	state := s.core.State()
	if c.Err == nil {
		w.failf("side %s: WR %d (%v) completed with %v and no error", s.name, rec.id, rec.op, c.Status)
	}
	// A Local Invalidate of an STag that is no longer valid fails alone:
	// the QP stays in RTS (as the engine does).
	badInv := rec.op == rdma.OpLocalInvalidate && c.Status == rdma.StatusLocalProtection && errors.Is(c.Err, ErrLocalInvalidate)
	if state == rdma.StateRTS && !badInv {
		w.failf("side %s: WR %d (%v) completed with %v (%v) while the QP is in RTS", s.name, rec.id, rec.op, c.Status, c.Err)
	}
	if w.cfg.clean() && !(rec.recv && w.phase >= simPhaseClose && c.Status == rdma.StatusFlushed) {
		w.failf("side %s: WR %d (%v) completed with %v (%v) in a run without faults or risky work", s.name, rec.id, rec.op, c.Status, c.Err)
	}
	switch c.Status {
	case rdma.StatusFlushed, rdma.StatusFatal:
	case rdma.StatusLocalProtection:
		if !rec.churn {
			w.failf("side %s: WR %d (%v) failed with a local protection error (%v), but it names only regions whose registration never changes", s.name, rec.id, rec.op, c.Err)
		}
		s.anyTerminate = "a local protection error on this side"
	case rdma.StatusLocalLength:
		if !rec.recv || !s.lengthRisk {
			w.failf("side %s: WR %d (%v) failed with a local length error (%v), but no message longer than a receive was posted", s.name, rec.id, rec.op, c.Err)
		}
	case rdma.StatusRemoteAccess, rdma.StatusRemoteOperation:
		var te *TerminateError
		if !errors.As(s.core.Err(), &te) || te.Sent {
			w.failf("side %s: WR %d (%v) failed with %v (%v), but the QP's error is %v, not a Terminate from the peer", s.name, rec.id, rec.op, c.Status, c.Err, s.core.Err())
		}
	default:
		w.failf("side %s: WR %d (%v) completed with unknown status %v", s.name, rec.id, rec.op, c.Status)
	}
	if rec.op == rdma.OpLocalInvalidate || rec.invalidates != nil {
		// It may or may not have begun its invalidation: the region is
		// not used again.
		if t := rec.invalidates; t != nil && t.state == simRegValid && t.stag == rec.invSTag {
			t.state, t.stag = simRegInvalid, 0
		}
	}
}

// checkSettled runs when the network has settled after the action phase:
// no send WR of a live QP may still be outstanding, and in a clean run
// every message must have been delivered and every Write placed, and the
// atomic words must hold what the model says.
func (w *simWorld) checkSettled() {
	for _, s := range w.sides {
		s.poll()
		if s.closed || s.dead || s.txDetached || s.core.State() != rdma.StateRTS {
			continue
		}
		for _, e := range s.sq[s.sqDone:] {
			if e.done {
				continue
			}
			if e.flags&rdma.Signaled != 0 {
				w.failf("side %s: the network settled but signaled %v WR %d (posted at step %d) has not completed", s.name, e.op, e.id, e.postedAt)
			}
		}
	}
	if !w.cfg.clean() {
		return
	}
	for _, s := range w.sides {
		for _, e := range s.sq[s.sqDone:] {
			if !e.done {
				s.succeeded(e, nil)
				e.implicit = true
			}
		}
		s.sqDone = len(s.sq)
		if len(s.sq) > 0 {
			s.proves(&simWR{seq: len(s.sq)})
		}
		if got, want := s.peer.rqDone, len(s.consumers); got != want {
			w.failf("side %s: %d of its messages that take a receive were posted, the peer completed %d receives", s.name, want, got)
		}
		for i, v := range s.mem.atomModel {
			if got := binary.NativeEndian.Uint64(s.mem.atom.bytes()[8*i:]); got != v {
				w.failf("side %s: atomic word %d holds %#x, the model says %#x", s.name, i, got, v)
			}
		}
	}
}

// final runs at the end: every accepted WR completed exactly once (a
// shared receive queue's untaken receives excepted), the memory holds
// what it must, and every Terminate on the wire had its cause.
func (w *simWorld) final() {
	for _, s := range w.sides {
		s.poll()
		for _, e := range s.sq[s.sqDone:] {
			if !e.done && e.flags&rdma.Signaled != 0 {
				w.failf("side %s: signaled %v WR %d (posted at step %d) never completed", s.name, e.op, e.id, e.postedAt)
			}
			if !e.done && s.core.State() != rdma.StateError {
				w.failf("side %s: unsignaled %v WR %d never completed and the QP ended in %v", s.name, e.op, e.id, s.core.State())
			}
		}
		untaken := 0
		if s.srq != nil {
			untaken = s.srq.Posted()
		}
		if left := len(s.rq) - s.rqDone; left != untaken {
			w.failf("side %s: %d receives never completed (%d still in the shared queue): the first is %d", s.name, left, untaken, s.rq[s.rqDone].id)
		}
		if st := s.core.State(); st != rdma.StateError {
			w.failf("side %s: the run ended with the QP in %v, not ERROR", s.name, st)
		}
		s.checkMemory(true)
	}
	w.checkTerminates()
}

var _ = mem.OK
