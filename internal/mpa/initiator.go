package mpa

import (
	"context"
	"errors"
	"net"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
)

// Connect runs the Initiator's side of MPA startup on nc, a freshly
// connected TCP connection (RFC 5044 §7.1, RFC 6581 §5): it sends the
// Request built from cfg (nil means DefaultConfig()), reads the Reply (its
// bytes exactly), applies DecideInitiator, and in peer-to-peer mode sends
// the agreed RTR message (for a Read RTR it also consumes the zero-length
// Read Response) before it returns the established *Conn.
//
// The startup is bounded by ctx and cfg.Timeout (DefaultInitiatorTimeout).
// On any error after validating cfg, nc is closed. The errors:
//
//   - *RejectError: the Responder rejected (R=1), with its private data;
//   - a startup *wire.ProtocolError found in the Reply (ErrBadKey,
//     ErrUnknownRev, ErrPrivateDataTooLong, ErrPipelined, ...): closed
//     without sending anything;
//   - ErrInvalidReply, ErrUnofferedExtension, ErrInsufficientIRD,
//     ErrNoRTRModel: wrapped, after the Terminate was sent as the first
//     FPDU;
//   - *TimeoutError, *PeerTerminateError, or an I/O error.
func Connect(ctx context.Context, nc net.Conn, cfg *Config) (*Conn, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if err := cfg.check(true); err != nil {
		return nil, err
	}
	s := begin(ctx, nc, cfg.timeout(true))
	s.maxULPDU = cfg.MaxULPDU
	hdr, blk := RequestFrame(cfg)
	reqBytes := appendFrameBlock(nil, hdr, &blk, cfg.PrivateData)
	if err := s.write(reqBytes); err != nil {
		return nil, s.fail(err)
	}
	rep, err := s.readFrame(stageReply, cfg.MaxPrivateData)
	if err != nil {
		return nil, s.fail(err)
	}
	if pipelined(nc) {
		return nil, s.fail(ErrPipelined)
	}
	req, _, _ := ParseFrame(reqBytes, 0)
	d := DecideInitiator(&req, &rep, cfg)
	switch d.Action {
	case ActionClose, ActionReject:
		return nil, s.fail(d.Err)
	case ActionTerminate:
		fc := newFPDUConn(s, &d.Params, false)
		return nil, s.terminate(fc, &d.Params, d.Err)
	}
	fc := newFPDUConn(s, &d.Params, false)
	if d.Params.P2P {
		if err := s.sendRTR(fc, &d.Params); err != nil {
			return nil, s.fail(err)
		}
		if d.Params.RTR == RTRRead {
			if _, err := s.awaitFPDU(fc, &d.Params, stageRTRReply, checkRTRResponse); err != nil {
				return nil, err
			}
		}
	}
	s.end()
	return &Conn{fc: fc, params: d.Params, peerPD: rep.ULPData()}, nil
}

// sendRTR sends the agreed RTR message as the Initiator's first FPDU.
func (s *startup) sendRTR(fc *fpdu.Conn, p *Params) error {
	var buf [wire.UntaggedHdrLen + wire.ReadRequestLen]byte
	if err := fc.Writer().WriteFPDU(appendRTR(buf[:0], p.RTR, rdmapVersion(p))); err != nil {
		return s.ioErr(stageSend, err)
	}
	return nil
}

// awaitFPDU reads one FPDU of the RTR exchange and checks it with check.
// On a protocol error it sends the matching Terminate and closes; on a
// Terminate from the peer or another error it closes. It returns the ULPDU
// with the connection still open when check passes. Until the FPDU's
// first bytes arrive it holds no receive buffer (see waitReadable): a peer
// that never sends its RTR costs its connection no staging buffer.
func (s *startup) awaitFPDU(fc *fpdu.Conn, p *Params, stage string, check func(*wire.ULPDU) error) (wire.ULPDU, error) {
	if err := waitReadable(fc.NetConn()); err != nil {
		return wire.ULPDU{}, s.fail(s.ioErr(stage, err))
	}
	var buf [rtrMaxULPDU]byte
	u, err := readULPDU(fc.Reader(), &buf, rdmapVersion(p))
	if err == nil {
		err = check(&u)
	}
	if err == nil {
		return u, nil
	}
	var pt *PeerTerminateError
	var pe *wire.ProtocolError
	switch {
	case errors.As(err, &pt):
		return u, s.fail(err)
	case errors.As(err, &pe):
		return u, s.terminate(fc, p, err)
	}
	return u, s.fail(s.ioErr(stage, err))
}
