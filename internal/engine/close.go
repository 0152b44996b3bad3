package engine

import (
	"context"
	"errors"
	"time"
)

// ErrDisconnected: the connection was closed in order (Disconnect on this
// side, or the peer's orderly close after its own drain).
var ErrDisconnected = errors.New("disconnected")

// Disconnect closes the QP in order: no new work is accepted, the work
// already posted is transmitted and completes (Reads included), then the
// connection is half-closed and, once the peer has closed its side too, torn
// down; receives still posted complete as flushed. A peer that does not
// close its side within Config.OpTimeout of the half-close fails the QP
// with ErrPeerStalled (Err reports it). If ctx ends first the QP is closed
// abruptly (Close) and ctx's error returned.
func (qp *QP) Disconnect(ctx context.Context) error {
	qp.mu.Lock()
	switch qp.state {
	case StateIdle:
		qp.mu.Unlock()
		return qp.Close()
	case StateRTS:
		qp.state = StateClosing
	case StateClosing:
	default:
		qp.mu.Unlock()
		<-qp.done
		return nil
	}
	qp.mu.Unlock()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		qp.mu.Lock()
		drained := qp.sqDone == qp.sqTail
		state := qp.state
		qp.mu.Unlock()
		if drained || state != StateClosing {
			break
		}
		select {
		case <-ctx.Done():
			_ = qp.Close()
			return ctx.Err()
		case <-qp.done:
			return nil
		case <-tick.C:
		}
	}
	// Everything was handed to TCP: wait for the transmit role (a last
	// flush may be under way) and half-close.
	qp.takeTxRole()
	if cw, ok := qp.conn.NetConn().(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		qp.kickRx() // the peer's close must be read, waiter or not
		// A peer that never closes its side fails the QP after the
		// operation timeout (watchdog.go), as any stalled peer does.
		qp.wd.halfClosed.Store(true)
	} else {
		qp.closeConn()
	}
	select {
	case <-qp.done:
		return nil
	case <-ctx.Done():
		qp.closeConn()
		<-qp.done
		return ctx.Err()
	}
}

// Close tears the QP down at once: the connection is closed without a
// Terminate (the peer sees the connection end) and every outstanding work
// request completes as flushed. It waits until that is done, then gives
// the QP's reservations back to its CQs.
func (qp *QP) Close() error {
	qp.mu.Lock()
	started := qp.conn != nil
	if qp.err == nil {
		qp.err = ErrLocallyClosed
		if qp.state != StateClosing {
			qp.state = StateError
		}
	}
	qp.mu.Unlock()
	if started {
		qp.closeConn()
		<-qp.done
	} else {
		// Never started: the first Close flushes, concurrent ones wait
		// for it.
		qp.idleClose.Do(func() {
			qp.takeTxRole()
			qp.flushAll()
			close(qp.done)
		})
	}
	qp.releaseOnce.Do(func() {
		qp.cfg.SendCQ.unreserve(len(qp.sq))
		qp.cfg.SendCQ.detach(qp)
		qp.cfg.RecvCQ.detach(qp)
		if qp.srq == nil {
			qp.cfg.RecvCQ.unreserve(len(qp.rq.ring))
		}
	})
	return nil
}
