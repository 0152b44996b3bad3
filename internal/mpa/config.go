package mpa

import (
	"errors"
	"time"
)

// Default startup timeouts, as Linux siw uses them (docs/spec/mpa.md §1).
const (
	DefaultInitiatorTimeout = 10 * time.Second // waiting for the Reply (and the RTR exchange)
	DefaultResponderTimeout = 5 * time.Second  // waiting for the Request (and the RTR)
	// DefaultIRDORD is the IRD and ORD of DefaultConfig.
	DefaultIRDORD = 16
)

// Config is one side's MPA startup configuration. The zero value is a
// minimal Rev 2 setup without CRC, P2P or extensions; DefaultConfig gives
// the project's defaults. Fields marked Initiator or Responder apply to that
// role only.
type Config struct {
	// Rev is the Initiator's MPA revision, Rev1 or Rev2 (0 means Rev2). A
	// Rev 2 Request always carries the RFC 6581 IRD/ORD block (H set).
	Rev uint8
	// CRC asks for MPA CRCs (C). CRCs are used if either side asks.
	CRC bool
	// Markers asks the peer to insert markers into what it sends (M).
	Markers bool
	// RefuseMarkers makes a Responder reject a Request with M, as Linux
	// siw does. By default markers are honoured in both directions.
	RefuseMarkers bool

	// IRD is the number of inbound RDMA Read (and Atomic) Requests this
	// side accepts outstanding, ORD the number it wants outstanding
	// towards the peer (RFC 6581 §5). At most IRDORDMax.
	IRD, ORD uint16

	// P2P (Initiator) offers RFC 6581 peer-to-peer mode (Rev 2 only) with
	// the RTR types in OfferRTR.
	P2P      bool
	OfferRTR RTR
	// RequireP2P (Initiator) fails a Reply without peer-to-peer mode with
	// Terminate "no matching RTR model"; otherwise such a Reply is
	// accepted and the connection runs without an RTR.
	RequireP2P bool
	// AcceptRTR (Responder) is the set of RTR types the Responder accepts.
	// Zero means no peer-to-peer mode: the Reply leaves A clear.
	AcceptRTR RTR

	// Extensions is the project extension set this side implements
	// (docs/spec/extensions.md §3).
	Extensions Ext
	// NoAdvertise leaves the extension bits out of this side's frame.
	NoAdvertise bool
	// NoEchoProbe (Initiator) leaves FlagEchoProbe out of a Request that
	// advertises extensions. Without the probe a Responder that echoes
	// reserved bits (Linux siw) looks as if it agreed to them.
	NoEchoProbe bool
	// DeclarePeerExtensions makes PeerExtensions, a ULP-level statement
	// of what the peer supports, override the bits on the wire.
	DeclarePeerExtensions bool
	PeerExtensions        Ext

	// PrivateData is the ULP private data to send (after the IRD/ORD block
	// under Rev 2). Up to MaxPrivateData in total; InteropPrivateData is
	// the most that Linux siw and Chelsio accept.
	PrivateData []byte
	// MaxPrivateData limits the peer's private data (0 means
	// MaxPrivateData); a frame over it is closed on.
	MaxPrivateData int
	// Timeout bounds the startup when the context has no earlier deadline
	// (0 means DefaultInitiatorTimeout or DefaultResponderTimeout).
	Timeout time.Duration
	// NoResponderHold (Responder) lets this side send FPDUs before the
	// Initiator's first FPDU has arrived, against RFC 5044 §7.1.2 (the
	// Responder "MUST receive and validate at least one FPDU before
	// sending any"), when peer-to-peer mode is not in use. Only for ULPs
	// that synchronise otherwise and whose Responder talks first (perftest's
	// ib_write_lat over Linux siw, which does not keep the rule either).
	NoResponderHold bool
	// MaxULPDU bounds the ULPDU_Length accepted from the peer in full
	// operation (fpdu.Options.MaxULPDU; 0 means 65535). The size to send
	// is Conn.MULPDU.
	MaxULPDU int
}

// DefaultConfig returns the project's startup defaults (docs/spec/mpa.md
// "Project decisions for startup"): Rev 2, CRC asked for, no markers asked
// for, IRD and ORD 16, P2P offering Write and Read RTR, accepting every RTR
// type as Responder, and both extensions advertised.
func DefaultConfig() *Config {
	return &Config{
		Rev:        Rev2,
		CRC:        true,
		IRD:        DefaultIRDORD,
		ORD:        DefaultIRDORD,
		P2P:        true,
		OfferRTR:   RTRWrite | RTRRead,
		AcceptRTR:  RTRAll,
		Extensions: ExtAll,
	}
}

// Configuration errors, reported before anything is sent.
var (
	errConfigRev  = errors.New("MPA revision must be 1 or 2")
	errConfigP2P  = errors.New("peer-to-peer mode needs MPA Rev 2 and at least one RTR type")
	errConfigIRD  = errors.New("IRD and ORD must be at most 16383 (0x3FFF)")
	errConfigPD   = errors.New("private data too long for an MPA frame")
	errConfigRTR  = errors.New("unknown RTR type bits")
	errConfigNone = errors.New("no MPA configuration")
)

// rev returns the effective Initiator revision.
func (c *Config) rev() uint8 {
	if c.Rev == 0 {
		return Rev2
	}
	return c.Rev
}

// check validates c for the given role.
func (c *Config) check(initiator bool) error {
	if c == nil {
		return errConfigNone
	}
	if c.IRD > IRDORDMax || c.ORD > IRDORDMax {
		return errConfigIRD
	}
	if c.OfferRTR&^RTRAll != 0 || c.AcceptRTR&^RTRAll != 0 {
		return errConfigRTR
	}
	if !initiator {
		// The Responder answers in the Request's Rev; room for the block
		// is checked when the Reply is built.
		if len(c.PrivateData) > MaxPrivateData {
			return errConfigPD
		}
		return nil
	}
	rev := c.rev()
	if rev != Rev1 && rev != Rev2 {
		return errConfigRev
	}
	if c.P2P && (rev != Rev2 || c.OfferRTR == 0) {
		return errConfigP2P
	}
	room := MaxPrivateData
	if rev == Rev2 {
		room -= IRDORDLen
	}
	if len(c.PrivateData) > room {
		return errConfigPD
	}
	return nil
}

// timeout returns the startup bound for the role.
func (c *Config) timeout(initiator bool) time.Duration {
	switch {
	case c.Timeout > 0:
		return c.Timeout
	case initiator:
		return DefaultInitiatorTimeout
	}
	return DefaultResponderTimeout
}
