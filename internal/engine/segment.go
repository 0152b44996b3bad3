package engine

import "github.com/goiwarp/iwarp/internal/wire"

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
