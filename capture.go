package iwarp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/goiwarp/iwarp/internal/pcapwrite"
)

// Capture records the traffic of iWARP connections as a pcap file, with
// synthesized Ethernet, IPv4 or IPv6, and TCP headers, so that a program can
// capture its own connections without the privileges a packet capture
// needs. The file reads in Wireshark, tshark and `iwarp decode`.
//
// A connection is recorded from the moment it is wrapped, before the MPA
// startup, so the capture holds the TCP handshake (synthesized), the MPA
// Request and Reply, every FPDU and the FIN. The addresses are the
// connection's own; the TCP sequence numbers start at fixed values. Each
// connection must be wrapped on one side only in a given Capture (two
// Captures, one per side, each hold the whole conversation).
//
// On the active side, set ConnOptions.Dialer to the function Dialer returns;
// on the passive side, wrap the net.Listener with Listener and give it to
// NewListener, or wrap an accepted connection with AcceptedConn before
// ReadConnRequest. Recording never fails a connection: an error of the
// underlying writer is kept and returned by Flush and Close.
//
// The methods of a Capture are safe for concurrent use. Output is buffered:
// call Close (or Flush) before reading the file.
type Capture struct {
	w *pcapwrite.Writer
}

// CaptureOptions configure a Capture. The zero value gives the defaults.
type CaptureOptions struct {
	// MSS is the most payload bytes per synthesized TCP segment, 1 to
	// 65495; 0 means 1460 (Ethernet). Larger values make smaller files
	// with an FPDU per packet more often.
	MSS int
}

// NewCapture writes a pcap file header to w and returns a Capture writing
// into it. w is not closed by the Capture.
func NewCapture(w io.Writer, opts *CaptureOptions) (*Capture, error) {
	var po pcapwrite.Options
	if opts != nil {
		po.MSS = opts.MSS
	}
	pw, err := pcapwrite.NewWriter(w, &po)
	if errors.Is(err, pcapwrite.ErrMSS) {
		return nil, fmt.Errorf("iwarp: capture MSS %d out of range 1..%d", po.MSS, pcapwrite.MaxMSS)
	}
	if err != nil {
		return nil, err
	}
	return &Capture{w: pw}, nil
}

// Conn returns nc recording its traffic, for a connection this side opened
// (dialed): this side is the TCP client in the capture. Give the result to
// QP.ConnectConn.
func (c *Capture) Conn(nc net.Conn) net.Conn { return pcapwrite.Conn(nc, c.w) }

// AcceptedConn returns nc recording its traffic, for a connection the peer
// opened: the peer is the TCP client in the capture. Give the result to
// ReadConnRequest.
func (c *Capture) AcceptedConn(nc net.Conn) net.Conn { return pcapwrite.AcceptedConn(nc, c.w) }

// Dialer returns a function for ConnOptions.Dialer that dials with dial (a
// net.Dialer when nil) and records the connection it makes.
func (c *Capture) Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return c.Conn(nc), nil
	}
}

// Listener returns ln recording every connection it accepts; give it to
// NewListener to capture the passive side.
func (c *Capture) Listener(ln net.Listener) net.Listener { return pcapwrite.Listener(ln, c.w) }

// Flush writes the buffered packets to the underlying writer. It returns
// ErrClosed after Close, or the first error writing met.
func (c *Capture) Flush() error { return captureErr(c.w.Flush()) }

// Close flushes the capture and stops recording: connections still open
// are no longer recorded (the file ends without their FIN). It returns
// ErrClosed when called again, or the first error writing met.
func (c *Capture) Close() error { return captureErr(c.w.Close()) }

// captureErr maps the writer's ErrClosed to the package's.
func captureErr(err error) error {
	if errors.Is(err, pcapwrite.ErrClosed) {
		return ErrClosed
	}
	return err
}
