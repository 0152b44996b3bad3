package verbs

import (
	"errors"
	"net"
	"time"
)

// pipeConn is one end of an in-memory connection built from two
// net.Pipes, one per direction, with a half-close (CloseWrite) as TCP has
// and write deadlines: what testing/synctest needs, whose bubbles cannot
// wait on real sockets. It has no file descriptor, so a QP over it reads
// with a receive goroutine of its own.
type pipeConn struct {
	r net.Conn // reads the other end's writes
	w net.Conn // writes what the other end reads
}

// pipePair returns the two ends of an in-memory connection.
func pipePair() (*pipeConn, *pipeConn) {
	ar, bw := net.Pipe()
	br, aw := net.Pipe()
	return &pipeConn{r: ar, w: aw}, &pipeConn{r: br, w: bw}
}

func (c *pipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }

// CloseWrite ends the stream the other end reads.
func (c *pipeConn) CloseWrite() error { return c.w.Close() }

// Close ends both directions: this end's reads and writes fail at once.
func (c *pipeConn) Close() error {
	c.r.Close()
	return c.w.Close()
}

func (c *pipeConn) LocalAddr() net.Addr  { return pipeAddr{} }
func (c *pipeConn) RemoteAddr() net.Addr { return pipeAddr{} }
func (c *pipeConn) SetDeadline(t time.Time) error {
	return errors.Join(c.r.SetDeadline(t), c.w.SetDeadline(t))
}
func (c *pipeConn) SetReadDeadline(t time.Time) error { return c.r.SetReadDeadline(t) }
func (c *pipeConn) SetWriteDeadline(t time.Time) error {
	return c.w.SetWriteDeadline(t)
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
