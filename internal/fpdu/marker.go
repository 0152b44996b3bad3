package fpdu

import "encoding/binary"

// This file holds every definition of MPA markers (RFC 5044 §4.2 and §4.3,
// as docs/spec/mpa.md §3 reads them), used alike by the Writer, the Reader
// and DecodeFPDU:
//
//   - A marker is 4 octets: 2 reserved (zero) and FPDUPTR (big-endian).
//   - Markers sit at every 512th octet of one direction's stream, counted
//     from the first octet of the first FPDU after startup.
//   - FPDUPTR is the number of octets from the first octet of the containing
//     FPDU's ULPDU_Length field to the first octet of the marker, modulo
//     2^16 (a 64 KiB FPDU with markers can be longer than 65535 octets;
//     RFC 5044 gives FPDUPTR 16 bits and does not say more).
//   - A marker due exactly where an FPDU starts belongs to that FPDU: it is
//     sent before its ULPDU_Length with FPDUPTR 0. A marker due just after
//     the last FPDU sent is therefore only sent with the next FPDU.
//   - The CRC covers every marker inside the FPDU, from a leading marker to
//     one due exactly where the CRC field would start, which is sent before
//     the CRC field (RFC 5044 §4.1, §4.3, §4.4: markers may fall anywhere
//     in the FPDU "before the CRC"). Every FPDU field is 4-aligned in the
//     stream, so no marker ever falls inside the 4 CRC octets.
//   - A receiver ignores the reserved octets and the two low bits of
//     FPDUPTR, which a sender sets to zero (RFC 5044 §4.2); they still count
//     in the CRC. Only FPDUPTR's other bits are checked.

// markerStream tracks the marker positions of one direction of a stream.
// The zero value with on == false inserts no markers; position tracking
// (pos) works either way.
type markerStream struct {
	on   bool
	pos  uint64 // stream offset of the next octet, markers included
	next uint64 // stream offset of the next marker (valid when on)
	hdr  uint64 // stream offset of the current FPDU's ULPDU_Length field
}

// newMarkerStream returns the state of a stream whose next octet is at
// stream offset pos.
func newMarkerStream(on bool, pos uint64) markerStream {
	next := (pos + MarkerInterval - 1) / MarkerInterval * MarkerInterval
	return markerStream{on: on, pos: pos, next: next, hdr: pos}
}

// due reports whether a marker must come before the next octet.
func (m *markerStream) due() bool { return m.on && m.pos == m.next }

// room returns how many octets may pass before the next marker is due.
// Call it only when markers are on and none is due.
func (m *markerStream) room() uint64 { return m.next - m.pos }

// startFPDU marks the stream position of a new FPDU. A leading marker, if
// due, is part of this FPDU and has FPDUPTR 0; the caller passes it next.
func (m *markerStream) startFPDU() { m.hdr = m.pos }

// fpduptr returns the FPDUPTR of the marker due now.
func (m *markerStream) fpduptr() uint16 { return uint16(m.pos - m.hdr) }

// passMarker advances past the marker due now. After a leading marker the
// FPDU's ULPDU_Length field follows, so hdr moves with it.
func (m *markerStream) passMarker() {
	leading := m.pos == m.hdr
	m.pos += MarkerLen
	m.next += MarkerInterval
	if leading {
		m.hdr = m.pos
	}
}

// putMarker writes a marker with the given FPDUPTR into b[:MarkerLen].
func putMarker(b []byte, fpduptr uint16) {
	_ = b[MarkerLen-1]
	b[0], b[1] = 0, 0
	binary.BigEndian.PutUint16(b[2:], fpduptr)
}

// markerOK reports whether b[:MarkerLen] is a marker for the given
// FPDUPTR, as a receiver reads it: the reserved octets and the two low bits
// of FPDUPTR are ignored (RFC 5044 §4.2). An FPDUPTR that is not a multiple
// of 4 (a header off the 4-octet grid) never matches.
func markerOK(b []byte, fpduptr uint16) bool {
	_ = b[MarkerLen-1]
	return binary.BigEndian.Uint16(b[2:])&^3 == fpduptr
}

// markerSloppy reports whether b[:MarkerLen] has bits set that a sender
// must leave zero: the reserved octets or the two low bits of FPDUPTR.
func markerSloppy(b []byte) bool {
	_ = b[MarkerLen-1]
	return b[0]|b[1]|b[3]&3 != 0
}
