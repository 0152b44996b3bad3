package decode

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
)

// The resynchronisation heuristic. After a gap, after a framing error, or
// in a capture that starts mid-connection, the decoder does not know where
// the next FPDU starts. It tries every byte offset in turn and takes the
// first one where:
//
//  1. (without markers) the bytes read as a plausible FPDU header:
//     ULPDU_Length of at least 14, DDP version 1, RDMAP version 1 or 2, an
//     opcode defined for that version whose buffer model matches the T bit
//     and, if untagged, whose queue number matches the QN field;
//  2. the whole FPDU lies inside the captured run; and
//  3. when the CRC is on (negotiated, or assumed from an earlier FPDU), the
//     CRC32c trailer matches. A 32-bit match is a strong proof (1 in 2^32
//     for random bytes), so it alone decides.
//     When the CRC is off, the ULPDU must parse completely (exact length
//     for its opcode) and pass the receiver's header checks, and the next
//     FPDU must do the same, unless this one ends the run.
//     When it is not known whether the CRC is on (no MPA startup in the
//     capture), a matching trailer decides "CRC on"; otherwise the
//     CRC-off rule decides "CRC off" — except for connections that are
//     not known to be MPA at all (no startup, port not given with -port),
//     where only matching CRCs are accepted, on this FPDU and the next
//     (unless this one ends the run), so that other TCP traffic is not
//     mistaken for iWARP.
//
// Markers are only handled when the MPA startup was captured (their
// positions count from the first FPDU); a mid-connection capture with
// markers will not resynchronise on FPDUs that contain one.

// resyncBudget bounds the bytes one direction's resynchronisation may
// decode while trying candidates, so that hostile input crafted to look like
// FPDU headers everywhere cannot make the scan quadratic.
const resyncBudget = 256 << 20

// minFPDU is the smallest FPDU: ULPDU_Length, a 14-byte tagged header, CRC.
const minFPDU = fpdu.HeaderLen + fpdu.MinULPDU + fpdu.CRCLen

// resync returns the offset in r.Data of the next FPDU boundary at or after
// i, or len(r.Data) and false when there is none.
func (w *walker) resync(r capture.Run, i int) (int, bool) {
	for j := i; j+minFPDU <= len(r.Data); j++ {
		if w.budget > resyncBudget {
			w.conn.Warnings = append(w.conn.Warnings, w.conn.Label(w.d)+": resynchronisation budget exhausted, rest of the stream skipped")
			return len(r.Data), false
		}
		if w.candidate(r, j) {
			return j, true
		}
	}
	return len(r.Data), false
}

// plausibleHeader applies rule 1 to the bytes of an FPDU without markers.
func plausibleHeader(b []byte) bool {
	if len(b) < minFPDU {
		return false
	}
	if int(binary.BigEndian.Uint16(b)) < fpdu.MinULPDU {
		return false
	}
	h, _, err := wire.ParseDDPHeader(b[fpdu.HeaderLen:])
	if err != nil {
		return false
	}
	_, err = wire.ValidateDDPHeader(&h, h.Control.Version())
	return err == nil
}

// plausibleULPDU reports whether u parses completely and passes the
// receiver's header checks under its own RDMAP version.
func plausibleULPDU(u []byte) bool {
	p, err := wire.ParseULPDU(u)
	if err != nil {
		return false
	}
	_, err = wire.ValidateDDPHeader(&p.DDP, p.DDP.Control.Version())
	return err == nil
}

// candidate reports whether an FPDU starts at r.Data[j], following rules
// 1-3, and settles an unknown CRC mode.
func (w *walker) candidate(r capture.Run, j int) bool {
	b := r.Data[j:]
	off := r.Off + uint64(j)
	if !w.markers && !plausibleHeader(b) {
		return false
	}
	if w.markers {
		// Check the header cheaply unless a marker falls inside it.
		pos := w.streamOff(off)
		next := (pos + fpdu.MarkerInterval - 1) / fpdu.MarkerInterval * fpdu.MarkerInterval
		switch {
		case next == pos && !plausibleHeader(b[min(fpdu.MarkerLen, len(b)):]):
			return false
		case next >= pos+minFPDU && !plausibleHeader(b):
			return false
		}
	}
	f, err := fpdu.DecodeFPDU(nil, b, w.streamOff(off), fpdu.Options{RecvMarkers: w.markers})
	w.budget += uint64(f.Size)
	if err != nil {
		return false
	}
	match := f.CRC == f.ComputedCRC
	switch w.crc {
	case CRCOn, CRCAssumedOn:
		return match
	case CRCUnknown:
		if match && (!w.strict || w.chainCRC(r, j+f.Size)) {
			w.crc = CRCAssumedOn
			return true
		}
		if w.strict || !w.chain(r, j, f) {
			return false
		}
		w.crc = CRCAssumedOff
		return true
	}
	return w.chain(r, j, f)
}

// chainCRC reports whether the FPDU at r.Data[k] also carries a matching
// CRC, or the run ends at k. A connection not known to be MPA needs two
// FPDUs in a row with matching CRCs: one match in 2^32 random candidates
// is too likely over a large capture.
func (w *walker) chainCRC(r capture.Run, k int) bool {
	if k >= len(r.Data) {
		return true
	}
	g, err := fpdu.DecodeFPDU(nil, r.Data[k:], 0, fpdu.Options{CRC: true})
	w.budget += uint64(g.Size)
	return err == nil
}

// chain applies the CRC-off part of rule 3 to the FPDU f found at
// r.Data[j] and the one after it.
func (w *walker) chain(r capture.Run, j int, f fpdu.Frame) bool {
	if !plausibleULPDU(f.ULPDU) {
		return false
	}
	k := j + f.Size
	if k >= len(r.Data) {
		return true
	}
	rest := r.Data[k:]
	g, err := fpdu.DecodeFPDU(nil, rest, w.streamOff(r.Off+uint64(k)), fpdu.Options{RecvMarkers: w.markers})
	w.budget += uint64(g.Size)
	if truncated(g, len(rest)) {
		return w.markers || plausibleHeader(rest) || len(rest) < minFPDU
	}
	return err == nil && plausibleULPDU(g.ULPDU)
}
