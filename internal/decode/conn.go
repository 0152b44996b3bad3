package decode

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
)

// Options control what DecodeConn treats as iWARP.
type Options struct {
	// Ports lists TCP ports whose connections are decoded as MPA even
	// when the capture holds no MPA startup (mid-connection captures with
	// CRC off can only be found this way).
	Ports []uint16
}

// DirStats counts what one direction of a connection carried.
type DirStats struct {
	MPAFrames  int
	FPDUs      int
	CRCGood    int
	CRCBad     int
	Errors     int // FPDUs with a framing, parse or receiver-check error
	Cut        int // FPDUs cut short by a gap in the capture (not errors: the capture lost bytes the wire carried)
	Markers    int // markers stripped
	BadMarkers int
	Gaps       int    // holes in the capture
	GapBytes   uint64 // bytes in them
	Skipped    uint64 // bytes skipped by resynchronisation
	Payload    uint64 // ULPDU payload bytes
}

// Conn is the decoded form of one TCP connection.
type Conn struct {
	C   *capture.Conn
	MPA bool // decoded as iWARP
	// Initiator is the index into C.Dir of the MPA Initiator's stream
	// (the one that sent the Request), or -1 when unknown.
	Initiator int
	Request   *mpa.Frame // nil if not captured
	Reply     *mpa.Frame
	// Startup is true when both MPA frames were decoded: CRC, Markers and
	// Ext are then the negotiated values.
	Startup bool
	CRC     CRCMode
	// CRCDir is how each direction's trailers were judged in the end
	// (differs from CRC when it had to be guessed).
	CRCDir   [2]CRCMode
	Markers  [2]bool // markers in the stream of each direction
	Ext      mpa.Ext // extension set in use (extensions.md §3)
	Rejected bool    // the Reply had R set
	// RTR is the ready-to-receive type the Reply chose in peer-to-peer
	// mode (RFC 6581 §5), zero otherwise.
	RTR   mpa.RTR
	Items []Item
	Stats [2]DirStats
	// Notes are connection-level remarks on how the settings were found;
	// they are complete before Each yields its first item.
	Notes []string
	// Warnings are remarks that arise while decoding (a resynchronisation
	// budget exhausted); complete when Each returns.
	Warnings []string

	starts [2]start
	strict bool // not known to be MPA: accept only FPDUs with a matching CRC
}

// Label returns the direction label of stream d: "I>R" or "R>I" when the
// Initiator is known, else "A>B" or "B>A".
func (c *Conn) Label(d int) string {
	switch {
	case c.Initiator < 0 && d == 0:
		return "A>B"
	case c.Initiator < 0:
		return "B>A"
	case d == c.Initiator:
		return "I>R"
	}
	return "R>I"
}

// startFrame decodes the MPA frame at offset 0 of s, if the stream starts
// with an MPA key (or a prefix of one). size is the frame's length; for a
// frame cut by the end of the captured bytes, err is mpa.ErrShortFrame.
func startFrame(s *capture.Stream) (st start) {
	if len(s.Chunks) == 0 || s.Chunks[0].Off != 0 {
		return st
	}
	data := s.Runs()[0].Data
	k := data[:min(len(data), len(mpa.RequestKey))]
	switch {
	case bytes.HasPrefix([]byte(mpa.RequestKey), k):
	case bytes.HasPrefix([]byte(mpa.ReplyKey), k):
		st.reply = true
	default:
		return st
	}
	st.ok = true
	st.f, st.size, st.err = mpa.ParseFrame(data, 0)
	if st.err == nil {
		return st
	}
	// Keep the raw header for display, and step over the private data
	// the header announces when there is a sane amount of it.
	st.raw = data[:min(len(data), mpa.HeaderLen)]
	st.size = len(st.raw)
	switch {
	case errors.Is(st.err, mpa.ErrShortFrame):
		st.size = len(data)
	case len(st.raw) == mpa.HeaderLen:
		if pd := int(binary.BigEndian.Uint16(st.raw[18:])); pd <= mpa.MaxPrivateData {
			st.size = min(len(data), mpa.HeaderLen+pd)
		}
	}
	return st
}

// start is what startFrame found.
type start struct {
	ok    bool // the stream starts with an MPA key
	reply bool // the Reply key
	f     mpa.Frame
	size  int
	err   error
	raw   []byte // the header bytes of a frame ParseFrame rejected
}

// Open prepares the decoding of one reassembled connection: it decodes the
// MPA startup frames and derives the settings (RFC 5044 §7.1, RFC 6581,
// extensions.md §3). Each then decodes the FPDUs.
func Open(c *capture.Conn, opts Options) *Conn {
	dc := &Conn{C: c, Initiator: -1}
	for d, s := range c.Dir {
		st := startFrame(s)
		dc.starts[d] = st
		if !st.ok {
			continue
		}
		dc.MPA = true
		if st.err == nil {
			fc := st.f
			if st.f.Reply {
				dc.Reply = &fc
			} else {
				dc.Request = &fc
			}
		}
	}
	// The Initiator sent the Request; else it is the peer of the Reply's
	// sender; else the side that sent the SYN.
	for d, st := range dc.starts {
		if st.ok && !st.reply {
			dc.Initiator = d
			break
		}
		if st.ok && st.reply {
			dc.Initiator = 1 - d
		}
	}
	if dc.Initiator < 0 && c.SawSYN && dc.MPA {
		dc.Initiator = 0
	}
	dc.settings()
	if !dc.MPA {
		for _, p := range opts.Ports {
			if c.A.Port() == p || c.B.Port() == p {
				dc.MPA = true
				dc.Notes = append(dc.Notes, "no MPA startup captured: decoded as MPA by port, FPDU boundaries found by resynchronisation")
				break
			}
		}
	}
	dc.strict = !dc.MPA
	return dc
}

// DecodeConn decodes one reassembled connection and keeps every item in
// Items. Its memory grows with the stream; tools that print use Open and
// Each (through Render) instead.
func DecodeConn(c *capture.Conn, opts Options) *Conn {
	dc := Open(c, opts)
	for it := range dc.Each {
		dc.Items = append(dc.Items, *it)
	}
	return dc
}

// settings derives CRC, markers and the extension set from the captured
// startup frames (RFC 5044 §7.1, extensions.md §3).
func (dc *Conn) settings() {
	req, rep := dc.Request, dc.Reply
	switch {
	case req != nil && rep != nil:
		dc.Startup = true
		dc.CRC = CRCOff
		if req.Flags&mpa.FlagCRC != 0 || rep.Flags&mpa.FlagCRC != 0 {
			dc.CRC = CRCOn
		}
		// M asks the peer to put markers into what it sends.
		i := dc.Initiator
		dc.Markers[i] = rep.Flags&mpa.FlagMarkers != 0
		dc.Markers[1-i] = req.Flags&mpa.FlagMarkers != 0
		dc.Rejected = rep.Flags&mpa.FlagReject != 0
		if blk, ok := rep.IRDORD(); ok && blk.P2P {
			dc.RTR = blk.RTR
		}
		dc.checkReply()
		offered, answered := req.Flags.Ext().Normalize(), rep.Flags.Ext().Normalize()
		switch {
		case answered&^offered != 0:
			dc.Notes = append(dc.Notes, "Reply claims extension bits the Request did not offer ("+
				answered.String()+" vs "+offered.String()+"): protocol error, extensions taken as none")
		case req.Flags&mpa.FlagEchoProbe != 0 && rep.Flags&mpa.FlagEchoProbe != 0:
			dc.Notes = append(dc.Notes, "Reply repeats the Request's echo probe (0x08): the Responder copies "+
				"reserved bits (Linux siw), so its extension bits are an echo: extensions taken as none")
		default:
			dc.Ext = answered
		}
	case req != nil:
		dc.CRC = CRCUnknown
		if req.Flags&mpa.FlagCRC != 0 {
			dc.CRC = CRCOn
		}
		dc.Markers[1-dc.Initiator] = req.Flags&mpa.FlagMarkers != 0
		dc.Notes = append(dc.Notes, "no MPA Reply captured: settings taken from the Request alone")
	case rep != nil:
		dc.CRC = CRCUnknown
		if rep.Flags&mpa.FlagCRC != 0 {
			dc.CRC = CRCOn
		}
		if dc.Initiator >= 0 {
			dc.Markers[dc.Initiator] = rep.Flags&mpa.FlagMarkers != 0
		}
		dc.Notes = append(dc.Notes, "no MPA Request captured: settings taken from the Reply alone")
	}
}

// checkReply notes when the Initiator, whose configuration the Request
// shows, would not accept the Reply (mpa.DecideInitiator: RFC 6581 §5,
// extensions.md §3).
func (dc *Conn) checkReply() {
	cfg := &mpa.Config{Rev: dc.Request.Rev}
	if blk, ok := dc.Request.IRDORD(); ok {
		cfg.IRD, cfg.ORD = blk.IRD, blk.ORD
	}
	dec := mpa.DecideInitiator(dc.Request, dc.Reply, cfg)
	if dec.Action != mpa.ActionAccept && dec.Action != mpa.ActionReject {
		dc.Notes = append(dc.Notes, "the Initiator's checks fail on this Reply ("+dec.Action.String()+"): "+dec.Err.Error())
	}
}

// rdmapVersion is the RDMAP version receivers check against.
func (dc *Conn) rdmapVersion() uint8 {
	if dc.Ext&mpa.ExtV2 != 0 {
		return wire.RDMAPVersion2
	}
	return wire.RDMAPVersion1
}

// frameAt returns the frame that carried stream offset off of s, or 0.
func frameAt(s *capture.Stream, off uint64) int {
	if c, ok := s.ChunkAt(off); ok {
		return c.Frame
	}
	return 0
}
