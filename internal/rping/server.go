package rping

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/goiwarp/iwarp"
)

// Server is rping's listening side: the listening rdma_cm identifier
// ("parent" in its events; each connection is a "child").
type Server struct {
	o   *Options
	p   *printer
	dev *iwarp.Device
	ln  *iwarp.Listener
}

// Listen binds and listens on addr (rping_bind_server). Port 0 picks a free
// port (see Addr).
func Listen(addr netip.AddrPort, o *Options) (*Server, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	s := &Server{o: o, p: newPrinter(o), dev: o.Device}
	if s.dev == nil {
		s.dev = iwarp.NewDevice(nil)
	}
	s.p.dbg("created cm_id %p\n", s)
	ln, err := iwarp.Listen("tcp", addr.String(), nil)
	if err != nil {
		s.p.errf("rdma_bind_addr: %s\n", strerror(err))
		return nil, fmt.Errorf("cannot listen on %v: %s", addr, strerror(err))
	}
	s.ln = ln
	s.p.dbg("rdma_bind_addr successful\n")
	s.p.dbg("rdma_listen\n")
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops listening.
func (s *Server) Close() error {
	s.p.dbg("destroy cm_id %p\n", s)
	return s.ln.Close()
}

// Serve serves one client until it disconnects (rping_run_server). It
// returns nil when rping would exit 0: the client closed the connection in
// order.
func (s *Server) Serve(ctx context.Context) error {
	req, err := s.ln.Accept(ctx)
	if err != nil {
		if !interrupted(ctx, err) {
			s.p.errf("wait for CONNECT_REQUEST state %d\n", stateError)
		}
		return fmt.Errorf("no connection request: %w", err)
	}
	if err := s.serve(ctx, req); err != nil {
		if !interrupted(ctx, err) {
			s.p.errf("rping server failed: %d\n", -1)
		}
		return err
	}
	return nil
}

// ServePersistent serves every client that connects, each on its own
// connection and goroutine, until ctx ends, and then returns nil (rping
// -P, which runs until it is killed). A client's failure does not stop
// the others: it is passed to clientErr, unless ctx has ended. clientErr
// is called while nothing else is printed (one call at a time, between
// rping's lines), so it may print to the same writers.
func (s *Server) ServePersistent(ctx context.Context, clientErr func(peer net.Addr, err error)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		req, err := s.ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.p.errf("wait for CONNECT_REQUEST state %d\n", stateError)
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.serve(ctx, req); err != nil && !interrupted(ctx, err) && clientErr != nil {
				s.p.mu.Lock()
				defer s.p.mu.Unlock()
				clientErr(req.RemoteAddr(), err)
			}
		}()
	}
}

// serve runs one connection: the child's setup, acceptance and
// rping_test_server.
func (s *Server) serve(ctx context.Context, req *iwarp.ConnRequest) error {
	c, err := newConn(s.o, s.p, s.dev, true)
	if err != nil {
		_ = req.Reject(nil)
		s.p.errf("setup_qp failed: %d\n", -1)
		return err
	}
	defer c.close()
	c.state = stateConnectRequest
	s.p.event("RDMA_CM_EVENT_CONNECT_REQUEST", c, false)
	s.p.dbg("child cma %p\n", c)
	s.p.dbg("accepting client connection request\n")
	if err := req.Accept(ctx, c.qp, &s.o.Conn); err != nil {
		ev, status := setupEvent(err)
		s.p.errf("cma event %s, error %d\n", ev, status)
		s.p.errf("connect error %d\n", -1)
		return fmt.Errorf("accepting %v: %w", req.RemoteAddr(), err)
	}
	s.p.event("RDMA_CM_EVENT_ESTABLISHED", c, false)
	s.p.dbg("ESTABLISHED\n")
	err = c.result(s.pongs(ctx, c))
	if err != nil {
		c.disconnect(ctx)
	}
	return err
}

// pongs is rping_test_server's loop; it ends when the connection does.
func (s *Server) pongs(ctx context.Context, c *conn) error {
	rdma := c.rdmaMR.Bytes()
	for {
		// Wait for the client's advertisement of its start buffer.
		if err := c.expect(ctx, stateReadAdv, "RDMA_READ_ADV"); err != nil {
			return err
		}
		s.p.dbg("server received sink adv\n")
		// RDMA Read the advertised length, whatever this side's size
		// (rping does not compare them: a client buffer larger than ours
		// fails here, as with rping).
		if !c.post(iwarp.SendWR{Op: iwarp.OpRead, Remote: c.remote,
			SGL: []iwarp.SGE{c.rdmaMR.SGE(0, int(c.remote.Len))}}) {
			return c.err
		}
		s.p.dbg("server posted rdma read req \n")
		if err := c.expect(ctx, stateReadComplete, "RDMA_READ_COMPLETE"); err != nil {
			return err
		}
		s.p.dbg("server received read complete\n")
		if s.o.Verbose {
			s.p.outf("server ping data: %s\n", cstring(rdma))
		}
		// The go-ahead: rping's server never fills its send buffer.
		if !c.sendMsg() {
			return c.err
		}
		s.p.dbg("server posted go ahead\n")
		if err := c.expect(ctx, stateWriteAdv, "RDMA_WRITE_ADV"); err != nil {
			return err
		}
		s.p.dbg("server received sink adv\n")
		// RDMA Write strlen(buffer)+1 bytes, whatever the advertised
		// length (rping's choice too).
		n := min(len(cstring(rdma))+1, len(rdma))
		s.p.dbg("rdma write from lkey %x laddr %x len %d\n", c.rdmaMR.STag(), c.rdmaMR.TO(), n)
		if !c.post(iwarp.SendWR{Op: iwarp.OpWrite, Remote: c.remote, SGL: []iwarp.SGE{c.rdmaMR.SGE(0, n)}}) {
			return c.err
		}
		if err := c.expect(ctx, stateWriteComplete, "RDMA_WRITE_COMPLETE"); err != nil {
			return err
		}
		s.p.dbg("server rdma write complete \n")
		if !c.sendMsg() {
			return c.err
		}
		s.p.dbg("server posted go ahead\n")
	}
}
