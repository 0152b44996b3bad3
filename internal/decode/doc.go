// Package decode follows reassembled TCP connections (package capture) as
// iWARP: it recognises the MPA Request and Reply (RFC 5044 §7, RFC 6581),
// derives the CRC, marker and extension settings of each direction from
// them, then decodes every FPDU (package fpdu) and the DDP and RDMAP headers
// it carries (package wire), RFC 7306 and the RDMAP Extensions V2 draft
// included. The result is a list of Items, one per MPA frame, FPDU, gap or
// resynchronisation, that Render prints one line each, and a per-connection
// summary.
//
// A capture that starts in the middle of a connection, or loses bytes, is
// resynchronised by scanning for a plausible FPDU; see resync.go for the
// heuristic.
package decode
