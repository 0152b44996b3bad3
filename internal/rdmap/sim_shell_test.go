package rdmap

import (
	"errors"

	"github.com/goiwarp/iwarp/rdma"
)

// The simulated shell: it moves octets between the Cores and the pipes
// (writes and reads of random sizes, delays), closes and half-closes the
// connection when a Core asks, runs the op timeout while a Core waits on
// its peer, and drives a Core when an invalidation it waits for drained.

// segLen draws how many octets one write or read moves, at most limit.
func (w *simWorld) segLen(limit int) int {
	if limit <= 1 {
		return limit
	}
	var n int
	switch w.rng.IntN(8) {
	case 0:
		n = 1
	case 1, 2:
		n = 1 + w.rng.IntN(16)
	default:
		n = 1 + w.rng.IntN(w.cfg.maxSeg)
	}
	return min(n, limit)
}

// delay draws a write's delivery delay in steps.
func (w *simWorld) delay() int64 {
	if w.cfg.maxDelay == 0 {
		return 0
	}
	return int64(w.rng.IntN(w.cfg.maxDelay + 1))
}

// pumpTx writes some of what side s's Core has to send into its pipe.
func (w *simWorld) pumpTx(s *simSide) {
	if s.closed || s.dead {
		return
	}
	if s.txDetached {
		w.pumpInject(s)
		return
	}
	s.iov = s.core.TxBufs(s.iov[:0])
	total := simIovLen(s.iov)
	if total == 0 {
		s.core.TxDone(0)
		return
	}
	var te *TerminateError
	if errors.As(s.core.Err(), &te) && !te.Sent {
		w.failf("side %s: TxBufs hands out %d octets after the peer's Terminate (%v)", s.name, total, te)
	}
	if s.halfClosed {
		// The socket is half-closed: the write could only fail (EPIPE).
		// (Found by the simulation, fixed in the Core:
		// TestSimFindingOutputAfterHalfClose.)
		w.failf("side %s: TxBufs hands out %d octets after WantHalfClose", s.name, total)
	}
	s.checkIovecs(s.iov)
	n := w.segLen(min(total, s.out.room()))
	lim, dying := w.txLimit(s)
	if s.dead {
		s.core.TxDone(0)
		return
	}
	if dying {
		n = min(n, lim)
	}
	if n == 0 {
		s.core.TxDone(0)
		return
	}
	if cap(s.txTmp) < n {
		s.txTmp = make([]byte, n+n/2)
	}
	tmp := s.txTmp[:0]
	for _, b := range s.iov {
		if len(tmp) == n {
			break
		}
		tmp = append(tmp, b[:min(len(b), n-len(tmp))]...)
	}
	d := w.delay()
	k, err := s.out.write(tmp, w.now, d)
	s.core.TxDone(k)
	if err != nil {
		w.ev(s.idx, simEvFail, 1, 0)
		s.core.Fail(&ConnectionError{Err: err})
		return
	}
	if k == 0 {
		return
	}
	w.moved = true
	w.ev(s.idx, simEvTx, uint64(k), uint64(d))
	s.mon.feed(tmp[:k])
	if dying {
		w.die(s)
	}
}

// pumpInject writes some of a hostile input, then the FIN after it.
func (w *simWorld) pumpInject(s *simSide) {
	if len(s.inject) == 0 {
		if !s.out.eof {
			s.out.closeWrite(nil, w.now, w.delay())
		}
		return
	}
	n := w.segLen(min(len(s.inject), s.out.room()))
	k, err := s.out.write(s.inject[:n], w.now, w.delay())
	if err != nil {
		s.inject = nil
		return
	}
	s.inject = s.inject[k:]
	w.moved = w.moved || k > 0
	w.ev(s.idx, simEvInject, uint64(k), 0)
}

// pumpRx reads some delivered octets into side s's Core, or tells it the
// stream ended.
func (w *simWorld) pumpRx(s *simSide) {
	if s.closed || s.dead || s.stopReading || s.eofDelivered {
		return
	}
	avail := s.in.readable(w.now)
	if avail == 0 {
		if eof, err := s.in.atEOF(w.now); eof {
			s.eofDelivered = true
			var x uint64
			if err != nil {
				x = 1
			}
			w.ev(s.idx, simEvRxEOF, x, 0)
			s.core.RxEOF(err)
		}
		return
	}
	if w.rng.IntN(3) == 0 {
		w.pumpRxVectored(s, avail)
		return
	}
	buf := s.core.RxBuf()
	if len(buf) == 0 {
		if buf != nil {
			s.core.RxDone(0)
		}
		return
	}
	s.checkRxBuf(buf)
	n := w.segLen(min(len(buf), avail))
	s.in.readInto(buf[:n], w.now)
	s.core.RxDone(n)
	w.moved = w.moved || n > 0
	w.ev(s.idx, simEvRx, uint64(n), 0)
}

// pumpRxVectored is pumpRx's read as a readv: it takes what RxBufs hands
// out (the rest of a payload's destination and the staging after it),
// checks every slice, and fills a random number of octets across them in
// order.
func (w *simWorld) pumpRxVectored(s *simSide, avail int) {
	s.rxIOV = s.core.RxBufs(s.rxIOV[:0])
	total := simIovLen(s.rxIOV)
	if total == 0 {
		if len(s.rxIOV) > 0 {
			s.core.RxDone(0)
		}
		return
	}
	for _, b := range s.rxIOV {
		if len(b) > 0 {
			s.checkRxBuf(b)
		}
	}
	n := w.segLen(min(total, avail))
	left := n
	for _, b := range s.rxIOV {
		if left == 0 {
			break
		}
		k := min(left, len(b))
		s.in.readInto(b[:k], w.now)
		left -= k
	}
	clear(s.rxIOV)
	s.core.RxDone(n)
	w.moved = w.moved || n > 0
	w.ev(s.idx, simEvRx, uint64(n), 0)
}

// shellDuties is what the shell does for a Core between events: close the
// connection when the Core wants it, run the op timeout, watch pending
// invalidations (revoking those that waited too long).
func (w *simWorld) shellDuties(s *simSide) {
	switch {
	case s.closed || s.dead:
	case s.core.WantClose() && s.closeAt == 0:
		// The shell acts on WantClose a little later (its poller is
		// busy): meanwhile the Core must hand out nothing after the
		// peer's Terminate (checked in pumpTx).
		s.closeAt = w.now + 1 + int64(w.rng.IntN(4))
	case s.core.WantClose() && w.now >= s.closeAt:
		if s.core.State() != rdma.StateError {
			s.core.Close()
		}
		w.closeConn(s)
	case !s.halfClosed && s.core.WantHalfClose():
		if q := s.txQueued(); q > 0 {
			w.failf("side %s: WantHalfClose with %d octets still to send", s.name, q)
		}
		s.out.closeWrite(nil, w.now, w.delay())
		s.halfClosed, s.halfAt = true, w.now
		w.cover.halfClose++
		w.ev(s.idx, simEvHalfClose, 0, 0)
	case s.halfClosed && w.now-s.halfAt > w.cfg.opTimeout:
		// The drain after the half-close is over: close.
		w.ev(s.idx, simEvClose, 1, 0)
		s.core.Close()
	}
	s.watchInvalidations()
	if s.woken > 0 && !s.dead {
		s.woken = 0
		s.poll()
	}
	if s.closed || s.dead {
		return
	}
	// The op timeout's clock runs only while no octet can move anywhere
	// (a slow but busy network is no stall: a real op timeout is long
	// next to it).
	if p := s.core.Progress(); !s.core.Waiting() || p != s.prog {
		s.prog, s.idle = p, 0
		return
	}
	if !w.stuck() {
		return
	}
	s.idle++
	if s.idle > w.cfg.opTimeout {
		w.ev(s.idx, simEvTimeout, 0, 0)
		if w.cfg.clean() {
			w.failf("side %s: op timeout in a run without faults or risky work: the Core waited on its peer %d idle steps without progress (%s)",
				s.name, w.cfg.opTimeout, w.stateText())
		}
		s.core.Fail(&ConnectionError{Err: errSimTimeout})
		s.idle = 0
	}
}

// stuck reports whether no octet can move in either direction now or
// after the pending delays: every reader has nothing to read (or does not
// read), every writer has nothing to write or no room.
func (w *simWorld) stuck() bool {
	if w.stuckAt == w.now {
		return w.stuckNow
	}
	w.stuckAt, w.stuckNow = w.now, false
	for _, s := range w.sides {
		if s.closed || s.dead {
			continue
		}
		if !s.stopReading && (s.in.queued() > 0 || s.in.eof && !s.eofDelivered) {
			return false
		}
		if s.txDetached && len(s.inject) > 0 && s.out.room() > 0 {
			return false
		}
		if !s.txDetached && !s.out.eof && s.out.room() > 0 && s.txQueued() > 0 {
			return false
		}
	}
	w.stuckNow = true
	return true
}

// closeConn closes side s's connection, as the shell does when the Core
// wants it: the peer reads what was sent, then EOF (a reset if s had input
// it never read), and what the peer sends from now on is dropped.
func (w *simWorld) closeConn(s *simSide) {
	unread := s.in.closeRead()
	if len(s.mon.buf) > 0 && !s.cutMidFPDU {
		s.cutMidFPDU = true
		w.cover.cut++
	}
	var err error
	var x uint64
	if unread {
		err, x = errSimReset, 1
	}
	s.out.closeWrite(err, w.now, w.delay())
	s.closed = true
	w.ev(s.idx, simEvWantClose, x, 0)
}

// txQueued is how many octets the Core has to send (TxBufs, given back
// at once with TxDone(0)).
func (s *simSide) txQueued() int {
	s.iov = s.core.TxBufs(s.iov[:0])
	n := simIovLen(s.iov)
	s.core.TxDone(0)
	return n
}

func simIovLen(iov [][]byte) int {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	return n
}
