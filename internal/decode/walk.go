package decode

import (
	"errors"
	"fmt"

	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
)

// walker decodes the FPDUs of one direction of a connection.
type walker struct {
	conn    *Conn
	d       int
	s       *capture.Stream
	strict  bool // not known to be MPA: accept only FPDUs with a matching CRC
	crc     CRCMode
	markers bool
	// base is the stream offset of the first FPDU, from which markers are
	// placed; baseKnown is false without a captured MPA frame.
	base      uint64
	baseKnown bool
	pos       uint64 // next stream offset to decode
	synced    bool   // an FPDU is known to start at pos
	budget    uint64 // bytes decoded by resynchronisation so far
	start     start  // the MPA frame at the start of the stream, if any
	yield     func(Item) bool
	stopped   bool // yield returned false
}

func (w *walker) stats() *DirStats { return &w.conn.Stats[w.d] }

func (w *walker) emit(it Item) {
	it.Conn, it.Dir = w.conn.C.ID, w.d
	if it.Frame == 0 && it.Size > 0 {
		it.Frame = frameAt(w.s, it.Off+it.Size-1)
	}
	if !w.stopped && !w.yield(it) {
		w.stopped = true
	}
}

func (w *walker) options() fpdu.Options {
	return fpdu.Options{CRC: w.crc.Checked(), RecvMarkers: w.markers}
}

// streamOff is the marker position of stream offset off.
func (w *walker) streamOff(off uint64) uint64 {
	if off < w.base {
		return 0
	}
	return off - w.base
}

// walk yields the stream's MPA frame, if any, then decodes every FPDU
// from w.pos to the end of the captured stream.
func (w *walker) walk() {
	if st := w.start; st.ok {
		w.stats().MPAFrames++
		w.emit(Item{Kind: KindMPA, Size: uint64(st.size), MPA: st.f, MPAErr: st.err, MPARaw: st.raw,
			Frame: frameAt(w.s, uint64(max(st.size, 1)-1))})
	}
	w.synced = w.baseKnown
	if !w.baseKnown {
		w.markers = false // marker positions are unknown
	}
	runs := w.s.Runs()
	for ri, r := range runs {
		if w.stopped {
			return
		}
		end := r.Off + uint64(len(r.Data))
		if end <= w.pos {
			continue
		}
		if r.Off > w.pos {
			w.stats().Gaps++
			w.stats().GapBytes += r.Off - w.pos
			w.emit(Item{Kind: KindGap, Off: w.pos, Size: r.Off - w.pos, Frame: frameAt(w.s, r.Off),
				Text: fmt.Sprintf("%d bytes missing from the capture", r.Off-w.pos)})
			w.synced = false
			w.pos = r.Off
		}
		w.run(r, ri == len(runs)-1)
		w.pos = end
	}
	if w.s.Truncated {
		w.emit(Item{Kind: KindNote, Off: w.s.Len(), Text: "stream not kept beyond this point (size limit)"})
	}
}

// run decodes the FPDUs of one contiguous run from w.pos.
func (w *walker) run(r capture.Run, last bool) {
	i := int(w.pos - r.Off)
	for i < len(r.Data) && !w.stopped {
		if !w.synced {
			j, ok := w.resync(r, i)
			if j > i {
				w.stats().Skipped += uint64(j - i)
				text := fmt.Sprintf("skipped %d bytes looking for an FPDU boundary", j-i)
				if !ok {
					text = fmt.Sprintf("no FPDU boundary found in %d bytes", j-i)
				}
				w.emit(Item{Kind: KindResync, Off: r.Off + uint64(i), Size: uint64(j - i), Text: text})
			}
			if !ok {
				return
			}
			i, w.synced = j, true
		}
		src := r.Data[i:]
		f, err := fpdu.DecodeFPDU(nil, src, w.streamOff(r.Off+uint64(i)), w.options())
		if w.crc == CRCUnknown && !truncated(f, len(src)) {
			// One MPA frame is missing: the first whole FPDU decides.
			w.crc = CRCAssumedOff
			if f.CRC == f.ComputedCRC {
				w.crc = CRCAssumedOn
			}
			f, err = fpdu.DecodeFPDU(nil, src, w.streamOff(r.Off+uint64(i)), w.options())
		}
		it := w.item(r.Off+uint64(i), f, err)
		if truncated(f, len(src)) {
			it.FPDUErr = fpdu.ErrTruncated
			it.Text = "capture ends inside this FPDU"
			if !last {
				it.Text = "a gap in the capture cuts this FPDU"
			}
			w.count(&it, !last)
			w.emit(it)
			w.synced = false
			return
		}
		w.count(&it, false)
		w.emit(it)
		if errors.Is(err, fpdu.ErrULPDUTooShort) || errors.Is(err, fpdu.ErrULPDUTooLong) ||
			(it.ULPDUErr != nil && errors.Is(err, fpdu.ErrCRC)) {
			// The framing is lost: look for the next FPDU from the next byte.
			w.synced = false
			i++
			continue
		}
		i += f.Size
	}
}

// truncated reports whether the FPDU f, decoded from n bytes, needed more.
func truncated(f fpdu.Frame, n int) bool {
	if f.Size < n {
		return false
	}
	need := fpdu.HeaderLen + f.Length + fpdu.PadLen(f.Length) + fpdu.CRCLen
	return f.Size-fpdu.MarkerLen*f.Markers < need
}

// item builds the Item of an FPDU decoded at stream offset off.
func (w *walker) item(off uint64, f fpdu.Frame, err error) Item {
	it := Item{Kind: KindFPDU, Off: off, Size: uint64(f.Size), FPDU: f, FPDUErr: err,
		CRCMode: w.crc, Markers: w.markers}
	it.ULPDU, it.ULPDUErr = wire.ParseULPDU(f.ULPDU)
	if len(f.ULPDU) < f.Length {
		it.ULPDUErr = nil // the DDP header is shown; the rest was not captured
		return it
	}
	if it.ULPDUErr != nil {
		return it
	}
	rv := w.conn.rdmapVersion()
	if !w.conn.Startup {
		rv = it.ULPDU.DDP.Control.Version() // nothing negotiated to check against
	}
	_, it.CheckErr = wire.ValidateDDPHeader(&it.ULPDU.DDP, rv)
	if w.d == w.conn.Initiator && w.conn.RTR != 0 && w.stats().FPDUs == 0 {
		it.Note = "P2P ready-to-receive (" + w.conn.RTR.String() + " RTR)"
	}
	if w.conn.Startup && w.conn.Ext == 0 && it.ULPDU.DDP.Control.Version() == wire.RDMAPVersion1 &&
		it.ULPDU.Opcode >= wire.OpImmediate && it.ULPDU.Opcode <= wire.OpAtomicResponse {
		it.Note = "RFC 7306 not negotiated (received liberally)"
	}
	return it
}

// count adds the FPDU of it to the direction's statistics; cut says that a
// gap in the capture, not the wire, made it incomplete.
func (w *walker) count(it *Item, cut bool) {
	st := w.stats()
	st.FPDUs++
	st.Markers += it.FPDU.Markers
	st.BadMarkers += it.FPDU.BadMarkers
	st.Payload += uint64(len(it.ULPDU.Payload))
	if it.CRCMode.Checked() && it.FPDUErr != fpdu.ErrTruncated {
		if it.FPDU.CRC == it.FPDU.ComputedCRC {
			st.CRCGood++
		} else {
			st.CRCBad++
		}
	}
	switch {
	case cut:
		st.Cut++
	case it.FPDUErr != nil || it.ULPDUErr != nil || it.CheckErr != nil:
		st.Errors++
	}
}
