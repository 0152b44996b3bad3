// Package fpdu is MPA "full operation" (RFC 5044 §4-§6): the framing of DDP
// segments (ULPDUs) into FPDUs over a TCP byte stream, the CRC32c trailer,
// markers, and the fast transmit and receive paths over a net.Conn.
//
// An FPDU on the wire is
//
//	ULPDU_Length (2, big-endian) | ULPDU | PAD (0-3 zero octets) | CRC (4, little-endian CRC32c)
//
// with, when markers were negotiated for a direction, a 4-octet marker at
// every 512th octet of that direction's stream (RFC 5044 §5). Markers are a
// transform on the stream position below the FPDU codec; their definitions
// live in marker.go.
//
// The startup (MPA Request/Reply, negotiation) is package mpa's; it builds a
// Conn with the negotiated Options once full operation begins. Tools decode
// captured bytes with DecodeFPDU.
package fpdu
