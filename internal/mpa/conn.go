package mpa

import (
	"net"

	"github.com/goiwarp/iwarp/internal/fpdu"
)

// Conn is an MPA connection whose startup is complete: it is in full
// operation (RFC 5044 §6), with the negotiated parameters and the peer's
// private data. In peer-to-peer mode the RTR exchange is already done.
type Conn struct {
	fc     *fpdu.Conn
	params Params
	peerPD []byte
}

// FPDU returns the full-operation framing of the connection, built with
// the negotiated CRC and marker options.
func (c *Conn) FPDU() *fpdu.Conn { return c.fc }

// Params returns the negotiated parameters.
func (c *Conn) Params() Params { return c.params }

// PeerPrivateData returns the ULP private data the peer sent in its frame
// (after the IRD/ORD block); the caller must not modify it.
func (c *Conn) PeerPrivateData() []byte { return c.peerPD }

// MULPDU returns the largest ULPDU to put into one FPDU on this connection:
// derived from the TCP effective MSS, less the markers when they are sent
// (RFC 5044 §4.1).
func (c *Conn) MULPDU() int {
	return fpdu.MULPDU(fpdu.EMSS(c.fc.NetConn()), c.params.SendMarkers)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.fc.Close() }

// newFPDUConn starts full operation over the startup's connection.
func newFPDUConn(s *startup, p *Params, holdSend bool) *fpdu.Conn {
	return fpdu.NewConn(s.nc, fpdu.Options{
		CRC:                  p.CRC,
		SendMarkers:          p.SendMarkers,
		RecvMarkers:          p.RecvMarkers,
		MaxULPDU:             s.maxULPDU,
		HoldSendUntilReceive: holdSend,
	})
}

// Handover is the connection in full operation as a sans-I/O framing
// continues it (see Conn.Handover).
type Handover struct {
	// NetConn is the connection.
	NetConn net.Conn
	// Framing are the negotiated framing options; HoldSendUntilReceive is
	// set when the Responder rule still holds sends back.
	Framing fpdu.Options
	// RxOff and TxOff are the stream offsets of the next octet to read and
	// to write, counted from the start of full operation.
	RxOff, TxOff uint64
	// Pending are octets already read from the connection (after the RTR
	// exchange) and not yet consumed.
	Pending []byte
}

// Handover ends c's own framing and returns what is needed to continue the
// stream: c must not be used afterwards (the connection stays open).
func (c *Conn) Handover() Handover {
	rx, tx, pending, hold := c.fc.Handover()
	o := c.fc.Options()
	o.HoldSendUntilReceive = hold
	return Handover{NetConn: c.fc.NetConn(), Framing: o, RxOff: rx, TxOff: tx, Pending: pending}
}
