package conform

import (
	"net"
	"time"
)

// captureConn is a net.Conn whose writes are kept: the framer writes FPDUs
// into it so that a case can send them whole, split, or altered.
type captureConn struct{ buf []byte }

func (c *captureConn) take() []byte {
	b := c.buf
	c.buf = nil
	return b
}

func (c *captureConn) Write(p []byte) (int, error)      { c.buf = append(c.buf, p...); return len(p), nil }
func (c *captureConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (c *captureConn) Close() error                     { return nil }
func (c *captureConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *captureConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *captureConn) SetDeadline(time.Time) error      { return nil }
func (c *captureConn) SetReadDeadline(time.Time) error  { return nil }
func (c *captureConn) SetWriteDeadline(time.Time) error { return nil }
