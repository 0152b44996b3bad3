// Package decode follows reassembled TCP connections (package capture) as
// iWARP: it recognises the MPA Request and Reply (RFC 5044 §7, RFC 6581),
// derives the CRC, marker and extension settings of each direction from
// them, then decodes every FPDU (package fpdu) and the DDP and RDMAP headers
// it carries (package wire), RFC 7306 and the RDMAP Extensions V2 draft
// included.
//
// Open prepares a connection; Each yields one Item per MPA frame, FPDU, gap
// or resynchronisation, the two directions merged in capture order, without
// keeping them; Render prints one line per item and a summary line per
// connection (the format of `iwarp decode`). ReadText turns the project's
// vector and hex texts into connections that decode like captures.
//
// A capture that starts in the middle of a connection, or loses bytes, is
// resynchronised by scanning for a plausible FPDU; see resync.go for the
// heuristic.
package decode
