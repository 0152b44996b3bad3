package mpa

import (
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Violations of MPA startup (RFC 5044 §7, RFC 6581 §5), each with the LLP
// Terminate code it maps to (docs/spec/mpa.md §4). Which reaction a
// violation earns (close, Reply with R=1, or Terminate then close) depends on
// who finds it: see docs/mpa.md.
var (
	// ErrShortFrame: the bytes end before the frame header or its private data.
	ErrShortFrame = &wire.ProtocolError{What: "MPA frame truncated", Code: rdma.TermLLPInvalidFrame}
	// ErrBadKey: the 16-byte key is neither "MPA ID Req Frame" nor
	// "MPA ID Rep Frame", or is the wrong one of the two.
	ErrBadKey = &wire.ProtocolError{What: "bad MPA frame key", Code: rdma.TermLLPInvalidFrame}
	// ErrUnknownRev: Rev is neither 1 (RFC 5044) nor 2 (RFC 6581).
	ErrUnknownRev = &wire.ProtocolError{What: "unsupported MPA Rev", Code: rdma.TermLLPInvalidFrame}
	// ErrPrivateDataTooLong: PD_Length over 512 (RFC 5044 §7.1) or over
	// the receiver's configured limit.
	ErrPrivateDataTooLong = &wire.ProtocolError{What: "MPA private data too long", Code: rdma.TermLLPInvalidFrame}
	// ErrShortIRDORD: Rev 2 with H set but fewer than 4 bytes of private
	// data to hold the RFC 6581 IRD/ORD block.
	ErrShortIRDORD = &wire.ProtocolError{What: "MPA private data too short for the IRD/ORD block", Code: rdma.TermLLPInvalidFrame}
	// ErrPipelined: bytes followed a Request or Reply before the next
	// FPDU was allowed (RFC 5044 §7.1.2; siw closes on them).
	ErrPipelined = &wire.ProtocolError{What: "bytes pipelined behind an MPA frame", Code: rdma.TermLLPInvalidFrame}
	// ErrInvalidReply: a Reply that does not answer the Request: a higher
	// Rev than requested, an IRD/ORD block that was not asked for, or
	// peer-to-peer bits in answer to a Request without them.
	ErrInvalidReply = &wire.ProtocolError{What: "MPA Reply does not match the Request", Code: rdma.TermLLPInvalidFrame}
	// ErrUnofferedExtension: the Reply claims an extension bit the Request
	// did not offer (extensions.md §3).
	ErrUnofferedExtension = &wire.ProtocolError{What: "MPA Reply claims an extension that was not offered", Code: rdma.TermLLPInvalidFrame}
	// ErrInsufficientIRD: the Responder's ORD exceeds the Initiator's IRD,
	// or a Read RTR was chosen with no IRD to answer it (RFC 6581 §5).
	ErrInsufficientIRD = &wire.ProtocolError{What: "insufficient IRD resources", Code: rdma.TermLLPInsufficientIRD}
	// ErrNoRTRModel: no RTR type both sides can use (RFC 6581 §5).
	ErrNoRTRModel = &wire.ProtocolError{What: "no matching RTR model", Code: rdma.TermLLPNoRTRModel}
	// ErrMarkersRefused: the Initiator asked for markers and the Responder
	// is configured to refuse them (as Linux siw does).
	ErrMarkersRefused = &wire.ProtocolError{What: "markers requested but refused", Code: rdma.TermLLPInvalidFrame}
	// ErrBadRTR: the first FPDU in peer-to-peer mode is not the RTR
	// message that was agreed, or the Read RTR's response is not the
	// expected zero-length Read Response.
	ErrBadRTR = &wire.ProtocolError{What: "unexpected FPDU in place of the RTR", Code: rdma.TermLLPNoRTRModel}
)
