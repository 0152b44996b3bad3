package mpa

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// PeerTerminateError reports a Terminate message the peer sent during the
// startup's RTR exchange (RFC 5040 §4.8): for example an Initiator that
// found the Reply unusable.
type PeerTerminateError struct {
	// Code is the Terminate's Layer, Error Type and Error Code, decoded
	// in either the RFC or the Linux siw layout (see wire.ParseTerminate).
	Code rdma.TermCode
	// Control is the Terminate Control field as received, and Ambiguous
	// says it reads as a valid code in both layouts.
	Control   [wire.TermControlLen]byte
	Ambiguous bool
	// SiwLayout says the control field was in Linux siw's layout.
	SiwLayout bool
}

// Error returns "peer sent Terminate LAYER/TYPE/0xCODE (meaning)".
func (e *PeerTerminateError) Error() string {
	return "peer sent Terminate " + e.Code.String()
}

// SentTerminateError reports that this side ended the startup with a
// Terminate message (RFC 5044 §7.1.2, RFC 6581 §9): Code is the Terminate's
// code and Cause the violation found in the peer's frame (a
// *wire.ProtocolError). Delivered is false when writing the Terminate
// failed.
type SentTerminateError struct {
	Code      rdma.TermCode
	Cause     error
	Delivered bool
	WriteErr  error
}

// Error returns "sent Terminate LAYER/TYPE/0xCODE (meaning): cause".
func (e *SentTerminateError) Error() string {
	if !e.Delivered {
		return fmt.Sprintf("sending Terminate %v failed (%v): %v", e.Code, e.WriteErr, e.Cause)
	}
	return fmt.Sprintf("sent Terminate %v: %v", e.Code, e.Cause)
}

// Unwrap returns the violation.
func (e *SentTerminateError) Unwrap() error { return e.Cause }

// drainTime bounds how long a side that sent a Terminate reads and discards
// input before closing (DESIGN.md: a close with unread input makes Linux
// send an RST that can discard the unsent Terminate).
const drainTime = time.Second

// rdmapVersion returns the RDMAP version of the connection's messages: 2 once
// V2 was agreed (extensions.md §2), else 1.
func rdmapVersion(p *Params) uint8 {
	if p.Extensions&ExtV2 != 0 {
		return wire.RDMAPVersion2
	}
	return wire.RDMAPVersion1
}

// appendTerminateULPDU appends the ULPDU of a Terminate carrying code and no
// attached headers: untagged, QN 2, MSN 1, MO 0, L=1 (RFC 5040 §4.8; the
// startup sends at most this one Terminate).
func appendTerminateULPDU(dst []byte, code rdma.TermCode, rv uint8) []byte {
	h := wire.DDPHeader{
		Last:    true,
		Version: wire.DDPVersion,
		Control: wire.MakeRDMAPControl(rv, wire.OpTerminate),
		QN:      wire.QNTerminate,
		MSN:     1,
	}
	dst = wire.AppendDDPHeader(dst, &h)
	return wire.AppendTerminate(dst, &wire.Terminate{Code: code})
}

// terminate sends a Terminate for cause (a *wire.ProtocolError) as the
// next FPDU on fc, half-closes, drains input for a bounded time and closes.
// It returns cause wrapped to say the Terminate was sent.
func (s *startup) terminate(fc *fpdu.Conn, p *Params, cause error) error {
	code := rdma.TermLLPCatastrophic
	var pe *wire.ProtocolError
	if errors.As(cause, &pe) {
		code = pe.Code
	}
	var buf [wire.UntaggedHdrLen + wire.TermControlLen]byte
	werr := fc.Writer().WriteFPDU(appendTerminateULPDU(buf[:0], code, rdmapVersion(p)))
	s.end()
	closeAfterTerminate(s.nc)
	return &SentTerminateError{Code: code, Cause: cause, Delivered: werr == nil, WriteErr: werr}
}

// closeAfterTerminate half-closes nc, discards input until the peer closes
// or drainTime passes, then closes it.
func closeAfterTerminate(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = nc.SetReadDeadline(time.Now().Add(drainTime))
	_, _ = io.Copy(io.Discard, nc)
	_ = nc.Close()
}
