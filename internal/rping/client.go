package rping

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/goiwarp/iwarp"
)

// client is the client's rdma_cm identifier: what its events name.
type client struct {
	o   *Options
	p   *printer
	dst netip.AddrPort
	src netip.Addr
}

// Dial runs rping's client: it resolves the route to dst (from src, if
// valid: rping's -I), connects, pings o.Count times and disconnects
// (rping_run_client). It returns nil when rping would exit 0: after the
// pings, or when the server closed the connection in order first, as
// rping's state DISCONNECTED makes it return 0; otherwise an error that
// says why (rping exits with -1 then).
func Dial(ctx context.Context, dst netip.AddrPort, src netip.Addr, o *Options) error {
	if err := o.check(); err != nil {
		return err
	}
	cl := &client{o: o, p: newPrinter(o), dst: dst, src: src}
	cl.p.dbg("created cm_id %p\n", cl)
	defer cl.p.dbg("destroy cm_id %p\n", cl)
	if err := cl.resolve(ctx); err != nil {
		return err
	}
	dev := o.Device
	if dev == nil {
		dev = iwarp.NewDevice(nil)
	}
	c, err := newConn(o, cl.p, dev, false)
	if err != nil {
		cl.p.errf("setup_qp failed: %d\n", -1)
		return err
	}
	defer c.close()
	c.id = cl
	c.state = stateRouteResolved
	if err := cl.connect(ctx, c); err != nil {
		return err
	}
	if err := c.result(cl.pings(ctx, c)); err != nil {
		if !interrupted(ctx, err) {
			cl.p.errf("rping client failed: %d\n", -1)
		}
		c.disconnect(ctx)
		return err
	}
	if c.state != stateDisconnected && c.disconnect(ctx) {
		c.disconnected()
	}
	return nil
}

// resolve is rping_bind_client: rdma_resolve_addr and rdma_resolve_route,
// each bounded by 2000 ms. Here the address is resolved by a route lookup
// (a UDP socket connected to dst, which sends nothing); iWARP has no path
// record to look up, so the route is resolved with it.
func (cl *client) resolve(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, ResolveTimeout)
	defer cancel()
	var d net.Dialer
	if cl.src.IsValid() {
		d.LocalAddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(cl.src, 0))
	}
	uc, err := d.DialContext(rctx, "udp", cl.dst.String())
	if err != nil {
		if isTimeout(err) {
			cl.p.errf("cma event %s, error %d\n", "RDMA_CM_EVENT_ADDR_ERROR", -errnoTimedOut)
			cl.p.errf("waiting for addr/route resolution state %d\n", stateIdle)
			return fmt.Errorf("address resolution of %v timed out after %v", cl.dst.Addr(), ResolveTimeout)
		}
		cl.p.errf("rdma_resolve_addr: %s\n", strerror(err))
		if cl.src.IsValid() {
			return fmt.Errorf("no route to %v from %v: %s", cl.dst.Addr(), cl.src, strerror(err))
		}
		return fmt.Errorf("no route to %v: %s", cl.dst.Addr(), strerror(err))
	}
	uc.Close()
	cl.p.event("RDMA_CM_EVENT_ADDR_RESOLVED", cl, true)
	cl.p.event("RDMA_CM_EVENT_ROUTE_RESOLVED", cl, true)
	cl.p.dbg("rdma_resolve_addr - rdma_resolve_route successful\n")
	return nil
}

// connect is rping_connect_client: the TCP connection (rdma_connect) and
// the MPA startup, whose outcome rdma_cm reports as an event.
func (cl *client) connect(ctx context.Context, c *conn) error {
	timeout := cl.o.timeout()
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := cl.o.Conn.Dialer
	if dial == nil {
		d := &net.Dialer{}
		if cl.src.IsValid() {
			d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(cl.src, 0))
		}
		dial = d.DialContext
	}
	start := time.Now()
	nc, err := dial(dctx, "tcp", cl.dst.String())
	if err != nil {
		cl.p.errf("rdma_connect: %s\n", strerror(err))
		cl.p.errf("connect error %d\n", -1)
		if isTimeout(err) && ctx.Err() == nil {
			return fmt.Errorf("no TCP connection to %v within %v", cl.dst, timeout)
		}
		return fmt.Errorf("cannot connect to %v: %s", cl.dst, strerror(err))
	}
	opts := cl.o.Conn
	opts.Timeout = timeout
	err = c.qp.ConnectConn(ctx, nc, &opts)
	if err != nil {
		ev, status := setupEvent(err)
		cl.p.errf("cma event %s, error %d\n", ev, status)
		cl.p.errf("wait for CONNECTED state %d\n", c.state)
		cl.p.errf("connect error %d\n", -1)
		return errors.New(setupFailure(err, cl.dst, time.Since(start), timeout))
	}
	c.state = stateConnected
	cl.p.event("RDMA_CM_EVENT_ESTABLISHED", cl, true)
	cl.p.dbg("ESTABLISHED\n")
	cl.p.dbg("rdma_connect successful\n")
	return nil
}

// setupFailure says in words why the MPA startup with dst failed.
func setupFailure(err error, dst netip.AddrPort, took, timeout time.Duration) string {
	var rej *iwarp.RejectedError
	switch {
	case errors.As(err, &rej):
		return fmt.Sprintf("%v rejected the connection", dst)
	case isTimeout(err):
		return fmt.Sprintf("timed out after %v waiting for the MPA Reply from %v: the peer accepted the TCP connection but did not answer the MPA Request", timeout.Round(time.Millisecond), dst)
	}
	return fmt.Sprintf("the MPA startup with %v failed after %v: %v", dst, took.Round(time.Millisecond), err)
}

// pings is rping_test_client's loop.
func (cl *client) pings(ctx context.Context, c *conn) error {
	start, rdma := c.startMR.Bytes(), c.rdmaMR.Bytes()
	first := byte('A')
	for ping := 0; cl.o.Count == 0 || ping < cl.o.Count; ping++ {
		c.state = stateReadAdv
		fill(start, ping, first)
		if first++; first > 'z' {
			first = 'A'
		}
		cl.advertise(c, c.startMR)
		if !c.sendMsg() {
			return c.err
		}
		// Wait for the server's go-ahead after its Read.
		if err := c.expect(ctx, stateWriteAdv, "RDMA_WRITE_ADV"); err != nil {
			return err
		}
		cl.advertise(c, c.rdmaMR)
		if !c.sendMsg() {
			return c.err
		}
		// Wait for the server to say its RDMA Write is complete.
		if err := c.expect(ctx, stateWriteComplete, "RDMA_WRITE_COMPLETE"); err != nil {
			return err
		}
		if cl.o.Validate && !bytes.Equal(start, rdma) {
			cl.p.errf("data mismatch!\n")
			return fmt.Errorf("ping %d: the data written back differs from the data read", ping)
		}
		if cl.o.Verbose {
			cl.p.outf("ping data: %s\n", cstring(rdma))
		}
	}
	return nil
}

// advertise formats the send buffer with mr's advertisement
// (rping_format_send): its TO and STag, and the ping size.
func (cl *client) advertise(c *conn, mr *iwarp.MR) {
	adv := iwarp.RemoteBuffer{TO: mr.TO(), STag: mr.STag(), Len: uint32(c.size)}
	_, _ = adv.AppendBinary(c.sendMR.Bytes()[:0]) // 16 bytes into 16: cannot fail
	cl.p.dbg("RDMA addr %x rkey %x len %d\n", adv.TO, adv.STag, adv.Len)
}

// fill writes ping number ping into buf as rping's client does: the text
// "rdma-ping-N: ", then the characters from first on, wrapping from 'z'
// back to 'A', and a 0 in the last byte.
func fill(buf []byte, ping int, first byte) {
	n := copy(buf, fmt.Sprintf("rdma-ping-%d: ", ping))
	c := first
	for i := n; i < len(buf); i++ {
		buf[i] = c
		if c++; c > 'z' {
			c = 'A'
		}
	}
	buf[len(buf)-1] = 0
}
