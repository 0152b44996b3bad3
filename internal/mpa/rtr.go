package mpa

import (
	"errors"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
)

// The RTR messages (RFC 6581 §5, docs/spec/mpa.md Project decisions).
const (
	// RTRWriteSTag is the STag of the zero-length RDMA Write sent as RTR:
	// 1, as Linux siw sends it (some hardware treats STag 0 specially).
	RTRWriteSTag = 1
	// RTRReadSrcSTag is the Data Source STag of the zero-length Read
	// Request sent as RTR; its Data Sink STag and both TOs are 0.
	RTRReadSrcSTag = 1
	// rtrMaxULPDU is the longest ULPDU the RTR exchange reads: an untagged
	// header and a Read Request header, or a Terminate with both headers
	// attached.
	rtrMaxULPDU = wire.UntaggedHdrLen + wire.TermControlLen + wire.TermSegLenLen + wire.UntaggedHdrLen + wire.ReadRequestLen
)

// appendRTR appends the ULPDU of the RTR message of type rtr under RDMAP
// version rv: a zero-length RDMA Write to STag 1, TO 0; a zero-length Read
// Request (sink STag 0, TO 0, size 0, source STag 1, TO 0) on QN 1, MSN 1;
// or a zero-length Send on QN 0, MSN 1. All single segments with L=1.
func appendRTR(dst []byte, rtr RTR, rv uint8) []byte {
	h := wire.DDPHeader{Last: true, Version: wire.DDPVersion}
	switch rtr {
	case RTRWrite:
		h.Tagged = true
		h.Control = wire.MakeRDMAPControl(rv, wire.OpWrite)
		h.STag = RTRWriteSTag
		return wire.AppendDDPHeader(dst, &h)
	case RTRRead:
		h.Control = wire.MakeRDMAPControl(rv, wire.OpReadRequest)
		h.QN, h.MSN = wire.QNReadReq, 1
		dst = wire.AppendDDPHeader(dst, &h)
		return wire.AppendReadRequest(dst, &wire.ReadRequest{SrcSTag: RTRReadSrcSTag})
	}
	h.Control = wire.MakeRDMAPControl(rv, wire.OpSend)
	h.QN, h.MSN = wire.QNSend, 1
	return wire.AppendDDPHeader(dst, &h)
}

// appendRTRResponse appends the zero-length Read Response that answers a
// Read RTR: tagged, L=1, to the request's Data Sink STag and TO.
func appendRTRResponse(dst []byte, req *wire.ReadRequest, rv uint8) []byte {
	h := wire.DDPHeader{
		Tagged:  true,
		Last:    true,
		Version: wire.DDPVersion,
		Control: wire.MakeRDMAPControl(rv, wire.OpReadResponse),
		STag:    req.SinkSTag,
		TO:      req.SinkTO,
	}
	return wire.AppendDDPHeader(dst, &h)
}

// readULPDU reads the next FPDU's ULPDU into buf and returns it parsed.
// A Terminate from the peer becomes a *PeerTerminateError; an FPDU too long
// to be an RTR message is ErrBadRTR.
func readULPDU(r *fpdu.Reader, buf *[rtrMaxULPDU]byte, rv uint8) (wire.ULPDU, error) {
	n, err := r.Next()
	if err != nil {
		return wire.ULPDU{}, err
	}
	if n > len(buf) {
		return wire.ULPDU{}, ErrBadRTR
	}
	if err := r.Read(buf[:n]); err != nil {
		return wire.ULPDU{}, err
	}
	if err := r.End(); err != nil {
		return wire.ULPDU{}, err
	}
	u, err := wire.ParseULPDU(buf[:n])
	if u.Header == wire.HeaderTerminate && (err == nil || errors.Is(err, wire.ErrTerminateHeaders)) {
		return u, &PeerTerminateError{Code: u.Terminate.Code, Control: u.Terminate.Control, Ambiguous: u.Terminate.Ambiguous, SiwLayout: u.Terminate.Layout == wire.LayoutSiw}
	}
	if err != nil {
		return u, err
	}
	if _, err := wire.ValidateDDPHeader(&u.DDP, rv); err != nil {
		return u, err
	}
	return u, nil
}

// checkRTR reports whether u is the zero-length RTR message of type rtr
// (RFC 6581 §5). STags are not checked: a zero-length Write or Read used
// as RTR touches no memory (docs/spec/mpa.md Project decisions).
func checkRTR(u *wire.ULPDU, rtr RTR) error {
	d := &u.DDP
	ok := d.Last && len(u.Payload) == 0
	switch rtr {
	case RTRWrite:
		ok = ok && d.Tagged && u.Opcode == wire.OpWrite
	case RTRRead:
		ok = ok && !d.Tagged && u.Opcode == wire.OpReadRequest && d.MSN == 1 && d.MO == 0 &&
			u.ReadRequest.Size == 0
	case RTRSend:
		ok = ok && !d.Tagged && u.Opcode == wire.OpSend && d.MSN == 1 && d.MO == 0
	default:
		ok = false
	}
	if !ok {
		return ErrBadRTR
	}
	return nil
}

// checkRTRResponse reports whether u is the zero-length Read Response to
// the Read RTR sent by appendRTR (sink STag 0, TO 0).
func checkRTRResponse(u *wire.ULPDU) error {
	d := &u.DDP
	if !d.Tagged || !d.Last || u.Opcode != wire.OpReadResponse || len(u.Payload) != 0 || d.STag != 0 || d.TO != 0 {
		return ErrBadRTR
	}
	return nil
}
