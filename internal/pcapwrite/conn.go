package pcapwrite

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"time"
)

// Stand-in addresses (TEST-NET-1, RFC 5737) for connections whose
// addresses are not IP, such as net.Pipe.
var (
	fallbackLocal  = netip.MustParseAddrPort("192.0.2.1:49152")
	fallbackRemote = netip.MustParseAddrPort("192.0.2.2:49153")
)

// addrPort returns a's IP address and port, or fallback.
func addrPort(a net.Addr, fallback netip.AddrPort) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		if ap := a.AddrPort(); ap.Addr().IsValid() {
			return ap
		}
	case *net.UDPAddr:
		if ap := a.AddrPort(); ap.Addr().IsValid() {
			return ap
		}
	}
	return fallback
}

// ErrNoCloseWrite is returned by CloseWrite when the wrapped connection has
// no CloseWrite method.
var ErrNoCloseWrite = errors.New("pcapwrite: wrapped connection cannot close its write side")

// conn records the traffic of a net.Conn in a Flow.
type conn struct {
	net.Conn
	flow   *Flow // nil when the Writer could not start the flow
	local  Side
	remote Side
}

// Conn returns nc recording into w everything read and written on it, as
// a TCP connection that nc's side opened (nc was dialed): the handshake is
// written at once, with nc's local and remote addresses (stand-ins from
// TEST-NET-1 when they are not IP addresses). Use AcceptedConn for a
// connection accepted from a listener.
//
// Recording never fails the connection: errors of w are kept by w (see
// Writer.Err). Bytes written are recorded before they are handed to nc, so
// that a reply is never recorded before what caused it; a Write that fails
// after writing part of p is recorded whole. Read returning io.EOF records
// the peer's FIN; Close and CloseWrite record nc's side's FIN. The returned
// connection has a CloseWrite method that calls nc's.
func Conn(nc net.Conn, w *Writer) net.Conn { return wrap(nc, w, Client) }

// AcceptedConn is Conn for a connection the peer opened (accepted from a
// net.Listener): the peer is the TCP client in the capture.
func AcceptedConn(nc net.Conn, w *Writer) net.Conn { return wrap(nc, w, Server) }

func wrap(nc net.Conn, w *Writer, local Side) net.Conn {
	la := addrPort(nc.LocalAddr(), fallbackLocal)
	ra := addrPort(nc.RemoteAddr(), fallbackRemote)
	c := &conn{Conn: nc, local: local, remote: 1 - local}
	client, server := la, ra
	if local == Server {
		client, server = ra, la
	}
	// The only possible errors are a closed or failed Writer, which Err
	// and later calls report; the connection is then not recorded.
	c.flow, _ = w.NewFlow(time.Now(), client, server)
	return c
}

// Read reads from the connection and records the bytes read.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.flow != nil {
		now := time.Now()
		if n > 0 {
			_ = c.flow.Data(now, c.remote, p[:n])
		}
		if errors.Is(err, io.EOF) {
			_ = c.flow.Fin(now, c.remote)
		}
	}
	return n, err
}

// Write records p, then writes it to the connection.
func (c *conn) Write(p []byte) (int, error) {
	if c.flow != nil {
		_ = c.flow.Data(time.Now(), c.local, p)
	}
	return c.Conn.Write(p)
}

// CloseWrite records this side's FIN and shuts down the writing side of
// the wrapped connection, if it has a CloseWrite method.
func (c *conn) CloseWrite() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return ErrNoCloseWrite
	}
	if c.flow != nil {
		_ = c.flow.Fin(time.Now(), c.local)
	}
	return cw.CloseWrite()
}

// Close records this side's FIN, unless it was recorded already, and
// closes the wrapped connection.
func (c *conn) Close() error {
	if c.flow != nil {
		_ = c.flow.Fin(time.Now(), c.local)
	}
	return c.Conn.Close()
}

// Listener returns ln whose accepted connections record into w, as
// AcceptedConn does.
func Listener(ln net.Listener, w *Writer) net.Listener { return &listener{Listener: ln, w: w} }

type listener struct {
	net.Listener
	w *Writer
}

// Accept waits for the next connection and wraps it.
func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return AcceptedConn(nc, l.w), nil
}
