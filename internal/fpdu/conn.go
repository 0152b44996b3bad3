package fpdu

import (
	"net"
	"sync"
	"sync/atomic"
)

// Conn is one MPA connection in full operation (RFC 5044 §6): a net.Conn
// whose bytes after startup are FPDUs. It has one Writer for the transmit
// direction and one Reader for the receive direction; each may be used by
// one goroutine at a time, independently of the other.
type Conn struct {
	nc   net.Conn
	opts Options
	w    Writer
	r    Reader

	holdOnce sync.Once
	hold     chan struct{} // closed when the Responder rule no longer holds sends back
	closed   atomic.Bool
}

// NewConn returns the full-operation Conn over c, whose next octet in each
// direction is the first octet of the first FPDU (marker positions count
// from there). The MPA startup must be complete.
func NewConn(c net.Conn, opts Options) *Conn {
	fc := &Conn{nc: c, opts: opts, hold: make(chan struct{})}
	fc.w.init(fc)
	fc.r.init(fc)
	if !opts.HoldSendUntilReceive {
		fc.releaseHold()
	}
	return fc
}

// Writer returns the transmit side of c.
func (c *Conn) Writer() *Writer { return &c.w }

// Reader returns the receive side of c.
func (c *Conn) Reader() *Reader { return &c.r }

// Options returns the framing parameters c was created with.
func (c *Conn) Options() Options { return c.opts }

// NetConn returns the underlying connection.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Close closes the underlying connection and wakes a Flush held back by
// the Responder rule, which then fails with net.ErrClosed.
func (c *Conn) Close() error {
	c.closed.Store(true)
	c.releaseHold()
	return c.nc.Close()
}

// releaseHold ends the Responder rule's hold on sending.
func (c *Conn) releaseHold() {
	c.holdOnce.Do(func() { close(c.hold) })
}

// Handover returns what a successor that frames the same stream itself (an
// Encoder and a Decoder) needs to continue it where c leaves off: the
// stream offsets of the next octet to read and to write (markers are
// placed relative to the start of full operation, RFC 5044 §4.3), the
// octets already read from the connection and not yet consumed, and
// whether the Responder rule (RFC 5044 §7.1.2) still holds sends back.
// The Reader must be between FPDUs and the Writer flushed; c must not be
// used afterwards (the connection itself stays open).
func (c *Conn) Handover() (rxOff, txOff uint64, pending []byte, hold bool) {
	r := &c.r
	if r.st.w > r.st.r {
		pending = append([]byte(nil), r.st.buf[r.st.r:r.st.w]...)
	}
	r.st.drop()
	select {
	case <-c.hold:
	default:
		hold = true
	}
	return r.m.pos, c.w.m.pos, pending, hold
}
