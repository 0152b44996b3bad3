package rdmap

import "github.com/goiwarp/iwarp/internal/wire"

// onPlace handles an FPDU whose first octets are staged: it stages the
// DDP header and the RDMAP header of the opcode, validates them, and
// tells the Decoder where the payload goes (or fails the stream).
func (c *Core) onPlace() {
	rx := &c.rx
	d := rx.d
	rx.heard = true
	hdr, n := d.Header(), d.ULPDULen()
	hl := wire.TaggedHdrLen
	if hdr[0]&wire.DDPTagged == 0 {
		hl = wire.UntaggedHdrLen
	}
	if n < hl {
		c.streamError(wire.ErrShortDDPHeader)
		return
	}
	if len(hdr) < hl {
		// Stage the RDMAP header the opcode implies too, in one go (the
		// headers are validated in order once they are all here).
		info, _ := wire.LookupOpcode(wire.RDMAPControl(hdr[1]).Version(), wire.RDMAPControl(hdr[1]).Opcode())
		d.Stage(min(n, hl+rdmapHdrLen(&info, hdr[0]&wire.DDPLast != 0)) - len(hdr))
		return
	}
	h, _, _ := wire.ParseDDPHeader(hdr[:hl])
	rx.h, rx.n = h, n
	rx.hraw = append(rx.hraw[:0], hdr[:hl]...) // for a Terminate: as received
	info, err := wire.ValidateDDPHeader(&h, c.rv)
	if err == nil {
		err = checkSingleSegment(info.Opcode, &h)
	}
	if err != nil {
		c.terminate(c.termDDP(err))
		return
	}
	need := min(n, hl+rdmapHdrLen(&info, h.Last))
	if len(hdr) < need {
		d.Stage(need - len(hdr))
		return
	}
	body, rest := hdr[hl:need], n-hl
	var te *TerminateError
	switch info.Opcode {
	case wire.OpWrite:
		te = c.rxWrite(&h, rest)
	case wire.OpReadResponse:
		te = c.rxReadResponse(&h, rest)
	case wire.OpSend, wire.OpSendSE, wire.OpSendInv, wire.OpSendSEInv:
		te = c.rxSend(&h, rest)
	case wire.OpSendImm, wire.OpSendInvImm, wire.OpSendSEImm, wire.OpSendSEInvImm:
		if h.Last {
			te = c.rxSendImmLast(&h, body, rest)
		} else {
			te = c.rxSend(&h, rest)
		}
	case wire.OpReadRequest:
		te = c.rxReadRequest(&h, body, rest)
	case wire.OpTerminate:
		c.rxTerminate(body)
	// RFC 7306 messages are processed whether or not the extension was
	// negotiated: only sending is gated (extensions.md §3.4).
	case wire.OpAtomicRequest:
		te = c.rxAtomicRequest(&h, body, rest)
	case wire.OpAtomicResponse:
		te = c.rxAtomicResponse(&h, body, rest)
	case wire.OpImmediate, wire.OpImmediateSE:
		te = c.rxImmediate(&h, body, rest)
	case wire.OpReadV2Request:
		te = c.rxReadV2Request(&h, body, rest)
	case wire.OpReadV2Response:
		te = c.rxReadV2Response(&h, rest)
	default:
		te = c.termDDP(wire.ErrUnexpectedOpcode)
	}
	if te != nil {
		c.terminate(te)
	}
}

// rdmapHdrLen is the length of the RDMAP header after the DDP header of a
// segment of info's opcode that is staged before it is handled (a
// Terminate's: as much as is read of it).
func rdmapHdrLen(info *wire.OpInfo, last bool) int {
	switch {
	case info.Opcode == wire.OpTerminate && info.HeaderLen > 0:
		return maxTermLen
	case info.ImmediateLast && last:
		return wire.ImmediateDataLen
	}
	return info.HeaderLen
}

// Segment-level checks that hold for whole messages, applied to every
// received segment before its payload is read.
//
// Read Request, Read V2 Request, Atomic Request and Response and Immediate
// Data are one DDP segment by definition (RFC 5040 §4.4, RFC 7306 §4 and
// §8.2, the V2 draft §6): their only segment is both their first (MO 0)
// and their last (L 1). RFC 7306 §8.2 makes these DDP checks, so their
// Terminates carry the DDP header only (docs/wire.md has the codes).

// checkSingleSegment checks the MO and L bit of a segment of a
// single-segment message of opcode op; other opcodes pass.
func checkSingleSegment(op wire.Opcode, h *wire.DDPHeader) error {
	switch op {
	case wire.OpReadRequest, wire.OpReadV2Request, wire.OpAtomicRequest, wire.OpAtomicResponse,
		wire.OpImmediate, wire.OpImmediateSE:
	default:
		return nil
	}
	if h.MO != 0 {
		return ErrSingleSegmentMO
	}
	if !h.Last {
		return ErrSingleSegmentNotLast
	}
	return nil
}
