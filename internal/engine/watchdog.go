package engine

import (
	"errors"
	"sync/atomic"
	"time"
)

// Dead-peer detection. A peer that stops reading is caught by the write
// deadline each flush sets (tx.go). A peer that stops sending in the middle
// of an FPDU, or never answers an outstanding Read, is caught here: a timer
// per QP (no per-FPDU cost beyond two atomic operations) checks that the
// receive side made progress within Config.OpTimeout whenever it is waiting
// for the peer: inside an FPDU, for the response to a Read or atomic, or,
// after Disconnect half-closed, for the peer's close. An idle connection
// with nothing outstanding is left to TCP keepalive.

// ErrPeerStalled: the peer made no progress within the operation timeout
// while this side was waiting for it.
var ErrPeerStalled = errors.New("peer stalled: no progress within the operation timeout")

type watchdog struct {
	t        *time.Timer
	progress atomic.Uint64 // FPDUs received
	inFPDU   atomic.Bool   // the receive goroutine is inside an FPDU
	last     uint64        // progress at the previous check (timer goroutine only)
	waited   time.Duration // how long no progress was seen while waiting
	// halfClosed: Disconnect sent our FIN and waits for the peer's close.
	halfClosed atomic.Bool
}

func (qp *QP) startWatchdog() {
	if qp.cfg.OpTimeout <= 0 {
		return
	}
	period := max(qp.cfg.OpTimeout/4, time.Millisecond)
	qp.wd.t = time.AfterFunc(period, func() { qp.watch(period) })
}

func (qp *QP) stopWatchdog() {
	if qp.wd.t != nil {
		qp.wd.t.Stop()
	}
}

// watch runs on the timer's goroutine.
func (qp *QP) watch(period time.Duration) {
	w := &qp.wd
	p := w.progress.Load()
	qp.mu.Lock()
	waiting := qp.state == StateRTS || qp.state == StateClosing
	waiting = waiting && (w.inFPDU.Load() || qp.orq.len() > 0 || w.halfClosed.Load())
	done := qp.err != nil
	qp.mu.Unlock()
	if done {
		return
	}
	if p != w.last || !waiting {
		w.last, w.waited = p, 0
	} else if w.waited += period; w.waited >= qp.cfg.OpTimeout {
		qp.fail(&ConnectionError{Err: ErrPeerStalled}, false)
		qp.closeConn() // wakes the receive goroutine, which tears down
		return
	}
	w.t.Reset(period)
}
