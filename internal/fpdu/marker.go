package fpdu

import "encoding/binary"

// This file holds every definition of MPA markers (RFC 5044 §4.3, as
// docs/spec/mpa.md §3 reads it), used alike by the Writer, the Reader and
// DecodeFPDU:
//
//   - A marker is 4 octets: 2 reserved (zero) and FPDUPTR (big-endian).
//   - Markers sit at every 512th octet of one direction's stream, counted
//     from the first octet of the first FPDU after startup.
//   - FPDUPTR is the number of octets from the first octet of the containing
//     FPDU's ULPDU_Length field to the first octet of the marker, modulo
//     2^16 (a 64 KiB FPDU with markers can be longer than 65535 octets).
//   - A marker due exactly where an FPDU starts belongs to that FPDU: it is
//     sent before its ULPDU_Length with FPDUPTR 0. A marker due just after
//     the last FPDU sent is therefore only sent with the next FPDU.
//   - The CRC covers every marker from the FPDU's first octet (a leading
//     marker included) up to the CRC field. A marker that falls inside the
//     4 CRC octets follows the first of them and is not covered: the CRC
//     is final before its first octet is sent.

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

// markerOK reports whether b[:MarkerLen] is a marker with zero reserved
// octets and the given FPDUPTR.
func markerOK(b []byte, fpduptr uint16) bool {
	_ = b[MarkerLen-1]
	return b[0] == 0 && b[1] == 0 && binary.BigEndian.Uint16(b[2:]) == fpduptr
}
