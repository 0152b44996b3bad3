package decode

import (
	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
)

// Kind says what an Item describes.
type Kind uint8

// The kinds of items.
const (
	KindMPA    Kind = iota // an MPA Request or Reply frame
	KindFPDU               // one FPDU
	KindGap                // stream bytes missing from the capture
	KindResync             // bytes skipped while looking for an FPDU boundary
	KindNote               // anything else worth a line (Text)
)

// CRCMode says how the CRC of a direction is judged.
type CRCMode uint8

// The CRC modes.
const (
	// CRCUnknown: no MPA startup seen; decided by the first FPDU found.
	CRCUnknown CRCMode = iota
	// CRCOff: neither MPA frame set C; the trailer is not checked.
	CRCOff
	// CRCOn: C was negotiated; every trailer is checked.
	CRCOn
	// CRCAssumedOn: no startup seen, but the first FPDU found carried a
	// matching CRC32c; later trailers are checked.
	CRCAssumedOn
	// CRCAssumedOff: no startup seen and the first FPDU found did not
	// carry a matching CRC32c; trailers are not checked.
	CRCAssumedOff
)

// Checked reports whether trailers are compared under m.
func (m CRCMode) Checked() bool { return m == CRCOn || m == CRCAssumedOn }

// Item is one decoded unit of a connection's stream.
type Item struct {
	Kind Kind
	Conn int // capture connection ID
	Dir  int // index into capture.Conn.Dir: 0 from A to B, 1 back
	// Frame is the capture frame (or vector record) that carried the
	// item's last byte; 0 when it was not captured.
	Frame int
	Off   uint64 // stream offset of the first byte
	Size  uint64 // stream bytes the item covers (markers included)

	// KindMPA.
	MPA    mpa.Frame
	MPAErr error
	// MPARaw is the header (up to 20 bytes) of a frame that failed to
	// parse, shown as read.
	MPARaw []byte

	// KindFPDU.
	FPDU     fpdu.Frame
	FPDUErr  error // framing problem (CRC, marker, ULPDU_Length, truncation)
	CRCMode  CRCMode
	Markers  bool // markers were stripped in this direction
	ULPDU    wire.ULPDU
	ULPDUErr error // ParseULPDU's verdict
	CheckErr error // ValidateDDPHeader's verdict under the negotiated RDMAP version
	// Note is an annotation: an RTR, an extension used without
	// negotiation.
	Note string

	// KindNote, KindGap, KindResync.
	Text string
}

// CRCGood reports whether the item is an FPDU whose checked CRC matched.
func (it *Item) CRCGood() bool {
	return it.Kind == KindFPDU && it.CRCMode.Checked() && it.FPDU.Size > 0 && it.FPDU.CRC == it.FPDU.ComputedCRC
}
