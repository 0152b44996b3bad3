package fpdu

import (
	"errors"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Protocol violations found in received FPDUs. Each carries the Terminate
// code (RFC 5044 §8) the violation maps to; test with errors.Is.
var (
	// ErrCRC: the received CRC does not match the computed CRC32c
	// (LLP/MPA 0x02). Fatal to the stream.
	ErrCRC = &wire.ProtocolError{What: "MPA CRC mismatch", Code: rdma.TermLLPCRC}
	// ErrMarker: a marker's FPDUPTR does not point at the FPDU's
	// ULPDU_Length field (LLP/MPA 0x03). Its reserved octets and the two
	// low bits of FPDUPTR are ignored (RFC 5044 §4.2).
	ErrMarker = &wire.ProtocolError{What: "MPA marker does not point at the FPDU start", Code: rdma.TermLLPMarker}
	// ErrULPDUTooShort: ULPDU_Length below MinULPDU, shorter than any DDP
	// header. Reported as LLP/MPA 0x03 ("marker and ULPDU_Length / FPDU
	// start mismatch"), the only RFC 5044 §8 code about the ULPDU_Length
	// field; 0x04 is for startup frames only.
	ErrULPDUTooShort = &wire.ProtocolError{What: "ULPDU_Length below the 14-octet DDP header", Code: rdma.TermLLPMarker}
	// ErrULPDUTooLong: ULPDU_Length above the receiver's bound
	// (Options.MaxULPDU). Same code as ErrULPDUTooShort.
	ErrULPDUTooLong = &wire.ProtocolError{What: "ULPDU_Length above the receive bound", Code: rdma.TermLLPMarker}
	// ErrTruncated: the stream ended inside an FPDU (LLP/MPA 0x01,
	// "TCP connection closed, terminated or lost"). DecodeFPDU reports a
	// buffer that ends inside an FPDU the same way.
	ErrTruncated = &wire.ProtocolError{What: "stream ended inside an FPDU", Code: rdma.TermLLPConnLost}
)

// Local usage errors: the caller broke the contract; nothing was sent or
// consumed.
var (
	// ErrSendULPDUTooLong: Append was given more than 65535 ULPDU octets.
	ErrSendULPDUTooLong = errors.New("ULPDU longer than 65535 octets")
	// ErrSendULPDUTooShort: Append was given fewer than MinULPDU octets,
	// which the peer would reject as a framing error.
	ErrSendULPDUTooShort = errors.New("ULPDU shorter than the 14-octet DDP header")
	// ErrNotInFPDU: Read, Discard or End was called with no FPDU started,
	// or Read/Discard asked for more than Remaining.
	ErrNotInFPDU = errors.New("read beyond the current ULPDU")
	// ErrFPDUInProgress: Next was called before End of the previous FPDU,
	// or End before all ULPDU octets were consumed.
	ErrFPDUInProgress = errors.New("FPDU not finished")
)
