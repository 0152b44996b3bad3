package iwarp

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// ServeConfig configures Listener.Serve.
type ServeConfig struct {
	// PD is the protection domain of the QPs. Default: the PD of the first
	// MR of Memory, or else a PD of a Device that Serve opens for itself
	// and closes when it returns.
	PD *PD
	// QP is the template of each connection's QP (zero fields: the
	// defaults of QPConfig). A nil SendCQ or RecvCQ is created for each QP
	// and owned by it, sized for its queue as Dial does; a CQ given here is
	// shared by every QP and must have room for all their queues
	// (ErrCQCapacity fails the connections that do not fit).
	QP QPConfig
	// Memory is advertised to every client in the private data of the MPA
	// Reply (AdvertiseMemory; at most MaxAdvertisedBuffers MRs, all of the
	// PD); a client finds it with QP.PeerMemory. The advertisement is made
	// for each connection, with the MRs' STags of that moment (after
	// MR.Rekey, new clients learn the new STag). It cannot be combined with
	// Conn.PrivateData.
	Memory []*MR
	// Conn holds the MPA choices of the Accepts (ConnOptions).
	Conn ConnOptions
	// Prepare, if set, runs on each connection's QP before the request is
	// accepted: post there the receives the client's first Sends need (on
	// iWARP a Send that finds no posted receive is fatal to the
	// connection). An error rejects the request.
	Prepare func(qp *QP) error
	// Handle, if set, runs in a goroutine of its own for each connection
	// once its QP is in StateRTS; when it returns the QP is disconnected
	// (QP.Disconnect) and closed. Its ctx is cancelled when Serve ends (its
	// QP is then closed too): Handle must return then. Without Handle a QP
	// stays up until the peer disconnects (or it fails) or Serve ends, and
	// is then closed.
	Handle func(ctx context.Context, qp *QP)
	// Logger, if set, receives a Warn record for each connection request
	// that could not be accepted (Serve goes on with the next).
	Logger *slog.Logger
}

// Serve accepts connection requests until ctx ends or the Listener is
// closed or fails. For each it makes a QP on cfg.PD from the template
// cfg.QP, with CQs of its own as Dial does, accepts the request on it with
// the memory advertisement of cfg.Memory as private data (QP.PeerMemory on
// the client's side), and runs cfg.Handle with it in a goroutine of its
// own. A request that cannot be accepted (the peer went away, its startup
// timed out, a QP could not be made) is logged to cfg.Logger and Serve goes
// on.
//
// Serve returns ctx.Err() once ctx ends, or the error of Listener.Accept
// (ErrClosed once the Listener is closed, ErrListenerFailed). Before it
// returns it cancels the ctx of the Handles, closes every QP it made
// (QP.Close: at once, whatever the peer does) and waits for every Handle
// it started to return. Several Serve calls may share a Listener.
func (l *Listener) Serve(ctx context.Context, cfg *ServeConfig) error {
	var c ServeConfig
	if cfg != nil {
		c = *cfg
	}
	cfg = &c
	s := &server{cfg: cfg, qps: make(map[*QP]struct{})}
	s.conn = cfg.Conn
	if len(cfg.Memory) > 0 {
		if len(cfg.Conn.PrivateData) > 0 {
			return fmt.Errorf("%w: ServeConfig.Memory and Conn.PrivateData are both set", ErrInvalidConfig)
		}
		if _, err := AdvertiseMemory(cfg.Memory...); err != nil {
			return err
		}
	}
	s.pd = cfg.PD
	if s.pd == nil && len(cfg.Memory) > 0 {
		s.pd = cfg.Memory[0].PD()
	}
	for i, mr := range cfg.Memory {
		if mr.PD() != s.pd {
			return fmt.Errorf("%w: memory %d to advertise is not registered in the QPs' PD", ErrInvalidConfig, i)
		}
	}
	if s.pd == nil {
		dev := NewDevice(nil)
		defer dev.Close() // after the QPs are closed: the Device is then released
		pd, err := dev.AllocPD()
		if err != nil {
			return err
		}
		s.pd = pd
	}

	sctx, cancel := context.WithCancel(ctx)
	var err error
	for {
		req, aerr := l.Accept(sctx)
		if aerr != nil {
			err = aerr
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			break
		}
		s.wg.Add(1)
		go s.serveConn(sctx, req)
	}
	cancel()
	s.mu.Lock()
	s.stopping = true
	qps := make([]*QP, 0, len(s.qps))
	for qp := range s.qps {
		qps = append(qps, qp)
	}
	s.mu.Unlock()
	for _, qp := range qps {
		qp.Close()
	}
	s.wg.Wait()
	return err
}

// server is the state of one Serve call.
type server struct {
	cfg  *ServeConfig
	pd   *PD
	conn ConnOptions // cfg.Conn
	wg   sync.WaitGroup

	mu       sync.Mutex
	stopping bool             // Serve is closing every QP
	qps      map[*QP]struct{} // the QPs made and not closed yet
}

// serveConn accepts one request and runs its connection to the end.
func (s *server) serveConn(ctx context.Context, req *ConnRequest) {
	defer s.wg.Done()
	qp, err := newOwnedQP(nil, s.pd, nil, s.cfg.QP)
	if err != nil {
		_ = req.Reject(nil)
		s.warn("iwarp: Serve could not make a queue pair", req, err)
		return
	}
	if !s.track(qp) {
		qp.Close()
		_ = req.Reject(nil)
		return
	}
	defer s.closeQP(qp)
	conn := s.conn
	if len(s.cfg.Memory) > 0 {
		if conn.PrivateData, err = AdvertiseMemory(s.cfg.Memory...); err != nil {
			_ = req.Reject(nil)
			s.warn("iwarp: Serve could not advertise its memory", req, err)
			return
		}
	}
	if s.cfg.Prepare != nil {
		if err := s.cfg.Prepare(qp); err != nil {
			_ = req.Reject(nil)
			s.warn("iwarp: Serve's Prepare failed", req, err)
			return
		}
	}
	if err := req.Accept(ctx, qp, &conn); err != nil {
		if ctx.Err() == nil {
			s.warn("iwarp: Serve could not accept a connection", req, err)
		}
		return
	}
	if s.cfg.Handle == nil {
		select {
		case <-qp.Done():
		case <-ctx.Done():
		}
		return
	}
	s.cfg.Handle(ctx, qp)
	// Bounded by the QP's OpTimeout, and at once when Serve ends (ctx, or
	// its closing the QP).
	_ = qp.Disconnect(ctx)
}

// track records qp among the QPs to close when Serve ends, unless it is
// ending.
func (s *server) track(qp *QP) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.qps[qp] = struct{}{}
	return true
}

// closeQP closes qp and forgets it.
func (s *server) closeQP(qp *QP) {
	s.mu.Lock()
	delete(s.qps, qp)
	s.mu.Unlock()
	qp.Close()
}

// warn logs a request that could not be served.
func (s *server) warn(msg string, req *ConnRequest, err error) {
	if s.cfg.Logger == nil {
		return
	}
	attrs := []any{slog.String("err", err.Error())}
	if a := req.RemoteAddr(); a != nil {
		attrs = append(attrs, slog.String("peer", a.String()))
	}
	s.cfg.Logger.Warn(msg, attrs...)
}
