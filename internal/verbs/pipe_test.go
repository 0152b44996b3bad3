package verbs

import (
	"io"
	"net"
	"time"
)

// pipeConn is one end of an in-memory connection built from two io.Pipes,
// with a half-close (CloseWrite) as TCP has: what testing/synctest needs,
// whose bubbles cannot wait on real sockets. It has no file descriptor,
// so a QP over it reads with a receive goroutine of its own.
type pipeConn struct {
	r *io.PipeReader
	w *io.PipeWriter
}

// pipePair returns the two ends of an in-memory connection.
func pipePair() (*pipeConn, *pipeConn) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	return &pipeConn{r: ar, w: aw}, &pipeConn{r: br, w: bw}
}

func (c *pipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }

// CloseWrite ends the stream the other end reads.
func (c *pipeConn) CloseWrite() error { return c.w.Close() }

// Close ends both directions: this end's reads and writes fail at once.
func (c *pipeConn) Close() error {
	c.r.CloseWithError(net.ErrClosed)
	return c.w.Close()
}

func (c *pipeConn) LocalAddr() net.Addr              { return pipeAddr{} }
func (c *pipeConn) RemoteAddr() net.Addr             { return pipeAddr{} }
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
