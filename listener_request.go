package iwarp

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp/internal/mpa"
)

// ConnRequest is a peer's request to connect, waiting for Accept or Reject.
type ConnRequest struct {
	nc       net.Conn
	req      *mpa.Request
	l        *Listener    // the Listener that read it, or nil (ReadConnRequest)
	p        *pendingConn // its startup at l
	answered atomic.Bool  // Accept or Reject was called
}

// errAnswered is the error of a second Accept or Reject.
var errAnswered = errors.New("iwarp: connection request already accepted or rejected")

// ReadConnRequest reads an MPA Request from a connection the caller
// accepted itself, as Responder. cfg's StartupTimeout (default 5 s) bounds
// the whole startup from this call, as at a Listener: the Request, the
// wait for Accept or Reject and the exchange inside Accept.
func ReadConnRequest(ctx context.Context, nc net.Conn, cfg *ListenConfig) (*ConnRequest, error) {
	lim := mpa.Limits{}
	timeout := defaultStartupTimeout
	if cfg != nil {
		lim.MaxPrivateData = cfg.MaxPrivateData
		if cfg.StartupTimeout > 0 {
			timeout = cfg.StartupTimeout
		}
	}
	lim.Deadline = time.Now().Add(timeout)
	tuneConn(nc)
	req, err := mpa.ReadRequest(ctx, nc, &lim)
	if err != nil {
		nc.Close()
		return nil, wrapSetupError(err)
	}
	return &ConnRequest{nc: nc, req: req}, nil
}

// PrivateData returns the private data of the peer's MPA Request.
func (r *ConnRequest) PrivateData() []byte { return r.req.PrivateData() }

// RemoteAddr returns the peer's address.
func (r *ConnRequest) RemoteAddr() net.Addr { return r.nc.RemoteAddr() }

// MPARevision returns the Request's MPA revision.
func (r *ConnRequest) MPARevision() int { return int(r.req.Rev()) }

// IRDORD returns the peer's IRD and ORD (RFC 6581), and false under MPA
// Rev 1, which does not carry them.
func (r *ConnRequest) IRDORD() (ird, ord int, ok bool) {
	b, ok := r.req.IRDORD()
	return int(b.IRD), int(b.ORD), ok
}

// Accept accepts the connection on qp (in StateIdle), answering with opts'
// private data; on success qp is in StateRTS. It ends at the earliest of
// ctx's deadline, opts.Timeout (default 5 s) and the end of the
// connection's StartupTimeout; a request its Listener shed fails with
// ErrShed.
func (r *ConnRequest) Accept(ctx context.Context, qp *QP, opts *ConnOptions) error {
	if err := qp.claim(); err != nil {
		return err
	}
	if err := r.answer(); err != nil {
		qp.unclaim()
		return err
	}
	c, err := r.req.Accept(ctx, opts.mpaConfig(qp))
	if err != nil {
		r.nc.Close()
		qp.unclaim()
		return r.failed(wrapSetupError(err))
	}
	if r.l != nil {
		if gone := r.l.established(r.p); gone != nil {
			c.Close()
			qp.unclaim()
			return wrapAs(nil, gone)
		}
		// The connection's count passes to the QP, until its teardown
		// (Device.qpDone).
		qp.listener.Store(r.l)
	}
	if err := qp.start(c); err != nil {
		qp.releaseListener()
		c.Close()
		return err
	}
	return nil
}

// Reject refuses the connection with the given private data (the reason),
// then closes it.
func (r *ConnRequest) Reject(privateData []byte) error {
	if err := r.answer(); err != nil {
		return err
	}
	err := r.req.Reject(privateData)
	if err != nil {
		// Refused before anything was sent (private data too long): the
		// request is answered all the same, and its connection closed.
		r.nc.Close()
	}
	return r.failed(err)
}

// answer tells the Listener that the application answers the request: nil,
// or why the Listener gave its startup up (or errAnswered, the request's
// connection left as it is).
func (r *ConnRequest) answer() error {
	if r.answered.Swap(true) {
		return errAnswered
	}
	if r.l == nil {
		return nil
	}
	return wrapAs(nil, r.l.answer(r.p, time.Now()))
}

// failed ends the request's startup at its Listener and returns err, or
// why the Listener gave the startup up first (which made it fail).
func (r *ConnRequest) failed(err error) error {
	if r.l == nil {
		return err
	}
	if gone := r.l.failed(r.p); gone != nil {
		return wrapAs(nil, gone)
	}
	return err
}
