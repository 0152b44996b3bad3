package mpa

import (
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
