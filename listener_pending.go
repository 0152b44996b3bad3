package iwarp

import (
	"container/list"
	"errors"
	"net"
	"os"
	"time"

	"github.com/goiwarp/iwarp/internal/mpa"
)

// A Listener's bookkeeping of the connections in startup. Every method
// with the Listener's mu held is marked "mu held"; the others take it.
// Connections are closed by the caller, after mu is released.

// pendingConn is a connection in startup at a Listener.
type pendingConn struct {
	nc       net.Conn
	deadline time.Time // TCP accept + StartupTimeout
	stage    startupStage
	// gone is why the startup ended without success (ErrShed, a timeout,
	// ErrClosed, errStartupFailed), or nil while it is in startup or once
	// it is established.
	gone  error
	req   *ConnRequest
	lru   *list.Element // in Listener.startups, while in startup
	qe    *list.Element // in Listener.queue, while queued
	timer *time.Timer   // while queued or handed out: gives it up at the deadline
}

// startupStage is how far a connection's startup got.
type startupStage uint8

const (
	stageAccepted  startupStage = iota // TCP accepted, its Request being read
	stageQueued                        // Request read, waiting for Accept
	stageHandedOut                     // returned by Listener.Accept
	stageAnswering                     // in ConnRequest.Accept or Reject
)

// peerPaced reports whether the stage waits for the peer's bytes (as
// opposed to the application).
func (s startupStage) peerPaced() bool { return s == stageAccepted || s == stageAnswering }

// shedScan bounds how many connections admit looks at (each with one
// system call) to find one whose peer sent nothing.
const shedScan = 8

// errWaitingForAccept is the timeout of a request the application did not
// accept or reject within the StartupTimeout.
var errWaitingForAccept = &mpa.TimeoutError{Stage: "waiting for Accept", Err: os.ErrDeadlineExceeded}

// errStartupFailed marks a startup that failed by itself (the MPA startup's
// own error is what the caller sees).
var errStartupFailed = errors.New("iwarp: connection setup failed")

// admit counts a new TCP connection, accepted at now, and enters it in
// startup; it returns nil when the connection is refused (MaxConnections
// reached with none in startup, or the Listener closing). To stay within
// MaxPending and MaxConnections it gives up the startup of another
// connection, returned as shed for the caller to close.
func (l *Listener) admit(nc net.Conn, now time.Time) (p *pendingConn, shed net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil
	}
	full := l.startups.Len() >= l.cfg.MaxPending
	if max := l.cfg.MaxConnections; max > 0 && l.open.Load() >= int64(max) {
		if l.startups.Len() == 0 {
			return nil, nil
		}
		full = true
	}
	if full {
		shed = l.giveUp(l.victim(), ErrShed)
	}
	l.open.Add(1)
	p = &pendingConn{nc: nc, deadline: now.Add(l.cfg.StartupTimeout)}
	p.lru = l.startups.PushBack(p)
	l.wg.Add(1) // its startup goroutine, started by the caller
	return p, shed
}

// shedOne gives up the startup that has gone longest without progress
// (victim), for a descriptor: it returns the connection to close, or nil
// when no startup is in progress.
func (l *Listener) shedOne() net.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.startups.Len() == 0 {
		return nil
	}
	return l.giveUp(l.victim(), ErrShed)
}

// victim picks the startup to give up (mu held, at least one in startup):
// the one that has gone longest without progress, passing over (and
// counting as progress) up to shedScan whose peer's bytes have arrived but
// were not read yet.
func (l *Listener) victim() *pendingConn {
	for range shedScan {
		p := l.startups.Front().Value.(*pendingConn)
		if !p.stage.peerPaced() || !mpa.BytesWaiting(p.nc) {
			return p
		}
		l.startups.MoveToBack(p.lru)
	}
	return l.startups.Front().Value.(*pendingConn)
}

// giveUp ends p's startup for the reason why (mu held, p in startup): it
// leaves the lists and the connection count, and its connection is
// returned for the caller to close.
func (l *Listener) giveUp(p *pendingConn, why error) net.Conn {
	p.gone = why
	l.leave(p)
	l.open.Add(-1)
	if l.acceptErr != nil {
		l.signalReady() // an Accept may wait for the last startup to end
	}
	return p.nc
}

// signalReady wakes one waiting Accept, if any (mu held or not).
func (l *Listener) signalReady() {
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// leave takes p out of the lists and stops its timer (mu held).
func (l *Listener) leave(p *pendingConn) {
	if p.lru != nil {
		l.startups.Remove(p.lru)
		p.lru = nil
	}
	if p.qe != nil {
		l.queue.Remove(p.qe)
		p.qe = nil
	}
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// advance records that p reached stage (mu held): it moves to the back of
// the shedding order. It reports false if p's startup was given up.
func (l *Listener) advance(p *pendingConn, stage startupStage) bool {
	if p.gone != nil || p.lru == nil {
		return false
	}
	p.stage = stage
	l.startups.MoveToBack(p.lru)
	return true
}

// enqueue queues p's Request for Accept, with a timer that gives it up at
// its deadline; false if p's startup was given up meanwhile.
func (l *Listener) enqueue(p *pendingConn, r *ConnRequest) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.advance(p, stageQueued) {
		return false
	}
	p.req = r
	p.qe = l.queue.PushBack(p)
	p.timer = time.AfterFunc(time.Until(p.deadline), func() { l.expire(p) })
	l.signalReady()
	return true
}

// dequeue takes the oldest queued request, if any; ErrClosed once the
// Listener is closed.
func (l *Listener) dequeue() (*ConnRequest, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	e := l.queue.Front()
	if e == nil {
		return nil, nil
	}
	p := l.queue.Remove(e).(*pendingConn)
	p.qe = nil
	l.advance(p, stageHandedOut)
	if l.queue.Len() > 0 { // another Accept may be waiting
		l.signalReady()
	}
	return p.req, nil
}

// expire gives up p if its request is still waiting for the application
// at its deadline (the other stages end at it by their own deadline).
func (l *Listener) expire(p *pendingConn) {
	l.mu.Lock()
	var nc net.Conn
	if p.gone == nil && p.lru != nil && (p.stage == stageQueued || p.stage == stageHandedOut) {
		nc = l.giveUp(p, errWaitingForAccept)
	}
	l.mu.Unlock()
	if nc != nil {
		nc.Close()
	}
}

// answer starts ConnRequest.Accept or Reject on p: nil, or why its
// startup was given up (then its connection is closed).
func (l *Listener) answer(p *pendingConn, now time.Time) error {
	l.mu.Lock()
	var nc net.Conn
	if p.gone == nil && !now.Before(p.deadline) {
		nc = l.giveUp(p, errWaitingForAccept)
	}
	if !l.advance(p, stageAnswering) {
		l.mu.Unlock()
		if nc != nil {
			nc.Close()
		}
		return p.gone
	}
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	l.mu.Unlock()
	return nil
}

// established takes p out of startup once its MPA startup succeeded: its
// count passes to its QP. It returns why p was given up if that happened
// first (its connection was closed).
func (l *Listener) established(p *pendingConn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.gone != nil {
		return p.gone
	}
	l.leave(p)
	return nil
}

// failed takes p out of startup and the count after its startup failed
// (its connection is closed). If the Listener had given p up before, it
// returns why (that made the startup fail).
func (l *Listener) failed(p *pendingConn) (gone error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.gone != nil {
		return p.gone
	}
	if p.lru != nil {
		l.giveUp(p, errStartupFailed)
	}
	return nil
}

// shut marks the Listener closed and gives up the startups whose request
// the application does not hold yet, returning their connections.
func (l *Listener) shut() []net.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var conns []net.Conn
	for e := l.startups.Front(); e != nil; {
		p := e.Value.(*pendingConn)
		e = e.Next()
		if p.stage == stageAccepted || p.stage == stageQueued {
			conns = append(conns, l.giveUp(p, ErrClosed))
		}
	}
	return conns
}
