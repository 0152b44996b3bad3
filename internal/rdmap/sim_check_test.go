package rdmap

import (
	"errors"
	"slices"

	"github.com/goiwarp/iwarp/rdma"
)

// checkStep runs after every step: canaries and frozen regions every time,
// the whole memory every 16 steps.
func (w *simWorld) checkStep() {
	full := w.now%16 == 0
	for _, s := range w.sides {
		s.checkMemory(full)
	}
}

// checkTerminates checks, at the end, every Terminate seen on the wire:
// it is the sender's first error (Core.Err says so, with the same code),
// its MSN is 1, and it has a cause: something the peer posted could
// provoke it, the peer died inside an FPDU (LLP/0/0x01), the sender had a
// local protection error, or it answers the hostile input as conform
// prescribes (sim_hostile_test.go).
func (w *simWorld) checkTerminates() {
	for _, s := range w.sides {
		if s.mon.term == nil {
			if w.hostileDone && w.cfg.victim == s.idx {
				w.checkHostile(s, nil)
			}
			continue
		}
		t := s.mon.term
		code := t.t.Code
		if t.msn != 1 {
			w.failf("side %s sent its Terminate with MSN %d, want 1", s.name, t.msn)
		}
		var te *TerminateError
		if !errors.As(s.core.Err(), &te) || !te.Sent || te.Code != code {
			w.failf("side %s sent Terminate %v, but its error is %v", s.name, code, s.core.Err())
		}
		if !(w.hostileDone && w.cfg.victim == s.idx) && !s.peer.cutMidFPDU {
			s.checkAttached(t)
		}
		switch {
		case w.hostileDone && w.cfg.victim == s.idx && t.step >= w.hostileStep:
			w.checkHostile(s, t)
		case s.anyTerminate != "":
		case slices.Contains(s.peer.provokes, code):
		case code == rdma.TermLLPConnLost && s.peer.cutMidFPDU:
		default:
			w.failf("side %s sent Terminate %v (%v), which nothing the peer did could provoke (its risky WRs provoke %v)", s.name, code, te, s.peer.provokes)
		}
	}
}

// checkAttached checks what a Terminate attaches (RFC 5040 §4.8): the DDP
// header of a segment the peer sent, its length, and a Read Request's
// RDMA header.
func (s *simSide) checkAttached(t *simTerm) {
	w := s.w
	if !t.t.D && !t.t.R && !t.t.M {
		return
	}
	segs, ok := s.peer.mon.segs[string(t.t.DDPHeader)]
	if !ok {
		w.failf("side %s's Terminate %v attaches a DDP header the peer never sent: % x", s.name, t.t.Code, t.t.DDPHeader)
	}
	for _, seg := range segs {
		if (!t.t.M || int(t.t.DDPSegLen) == seg.n) && (!t.t.R || string(t.t.RDMAHeader) == seg.rdma) {
			return
		}
	}
	w.failf("side %s's Terminate %v gives segment length %d and RDMA header % x; the peer's segments with that DDP header: %v",
		s.name, t.t.Code, t.t.DDPSegLen, t.t.RDMAHeader, segs)
}

// faultsDue starts the configured fault at its step.
func (w *simWorld) faultsDue() {
	c := &w.cfg
	if c.hostile != nil && !w.hostileDone && w.now >= c.hostileAt {
		w.hostileTick()
	}
	for _, s := range w.sides {
		if s.resumeAt > 0 && w.now >= s.resumeAt {
			s.stopReading, s.resumeAt = false, 0
		}
	}
	if c.fault == simFaultNone {
		return
	}
	s := w.sides[c.simFaultSide]
	switch {
	case w.now == c.simFaultAt:
		w.ev(s.idx, simEvFault, uint64(c.fault), 0)
		w.cover.fault[c.fault]++
		switch c.fault {
		case simFaultStopRead, simFaultStopReadAt:
			s.stopReading = true
		case simFaultDie:
			s.dying = true
		case simFaultReset:
			for _, p := range w.pipes {
				p.resetNow(w.now)
			}
		case simFaultAppClose:
			s.core.Close()
			s.disconnected = true
		case simFaultAppFail:
			s.core.Fail(&ConnectionError{Err: errSimDied})
		case simFaultDisconnect:
			s.core.Disconnect()
			s.disconnected = true
		}
	case c.fault == simFaultStopRead && w.now == c.simFaultAt+c.simFaultLen:
		s.stopReading = false
	case s.dying && w.now > c.simFaultAt+2*c.opTimeout:
		w.die(s) // it had nothing to send: it dies between FPDUs
	}
}

// txLimit bounds a write of a side that is dying: it dies inside the next
// FPDU (or at once if it is inside one already).
func (w *simWorld) txLimit(s *simSide) (int, bool) {
	if !s.dying {
		return 0, false
	}
	if len(s.mon.buf) > 0 {
		w.die(s)
		return 0, true
	}
	rem, ok := s.mon.remaining(s.iov)
	if !ok {
		return simIovLen(s.iov), true // all of it is inside the FPDU
	}
	if rem < 2 {
		return rem, true
	}
	return 1 + w.rng.IntN(rem-1), true
}

// die ends a side's process: its connection closes (a FIN, or a reset
// now and then) and nothing drives its Core any more.
func (w *simWorld) die(s *simSide) {
	var err error
	if w.rng.IntN(3) == 0 {
		err = errSimReset
	}
	s.cutMidFPDU = len(s.mon.buf) > 0
	if s.cutMidFPDU {
		w.cover.cut++
	}
	s.out.closeWrite(err, w.now, w.delay())
	s.in.closeRead()
	s.dead, s.dying = true, false
	w.ev(s.idx, simEvFault, uint64(simFaultDie), 1)
}

// resetNow is a connection reset: queued octets are lost, the reader sees
// the reset, and writes fail.
func (p *simPipe) resetNow(now int64) {
	p.data, p.head, p.arrivals = p.data[:0], 0, p.arrivals[:0]
	if !p.eof {
		p.eof, p.eofErr, p.eofAt = true, errSimReset, now
	}
	p.reset = true
}
