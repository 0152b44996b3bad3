package conform

import (
	"context"
	"net"

	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/rdma"
)

// Need is what a case requires of the responder or of the startup; a case
// whose needs are not met is skipped with the reason.
type Need uint16

// The needs a case can declare.
const (
	// NeedRegion: the main region is advertised.
	NeedRegion Need = 1 << iota
	// NeedReadOnly, NeedOtherPD, NeedInvalidated, NeedRekeyed: that slot
	// of the advertisement is present.
	NeedReadOnly
	NeedOtherPD
	NeedInvalidated
	NeedRekeyed
	NeedWriteOnly
	// NeedRFC7306, NeedV2: the extension was agreed in the startup.
	NeedRFC7306
	NeedV2
	// NeedNoRFC7306: RFC 7306 was not agreed (the case's startup asks for
	// none, so this holds unless the responder forces it).
	NeedNoRFC7306
	// NeedIRD: the responder accepts at least one inbound Read Request.
	NeedIRD
	// NeedSendMarkers: the responder asked us for markers (its Reply's M).
	NeedSendMarkers
	// NeedCRC: CRCs are in use on the connection.
	NeedCRC
	// NeedWindows: the memory window slots are advertised.
	NeedWindows
)

// WantKind is the kind of outcome the specification prescribes.
type WantKind uint8

// The kinds of outcome.
const (
	// WantTerminate: a Terminate with Want.Code, then the connection closes.
	WantTerminate WantKind = iota
	// WantAccept: no Terminate; the connection keeps answering (a
	// zero-length Read Request probe gets its Read Response).
	WantAccept
	// WantRefused: the startup fails: the responder closes (or rejects)
	// without a successful Reply.
	WantRefused
	// WantClosed: the responder closes the connection without sending a
	// Terminate (RFC 5040 §5.5: no Terminate answers a Terminate).
	WantClosed
	// WantTeardown: the responder closes the connection; a Terminate is
	// allowed before it, none is required (RFC 5044 leaves the action to
	// the implementation, e.g. for a stream that ends inside an FPDU).
	WantTeardown
)

// Attach says which headers of the offending segment a Terminate carries
// (RFC 5040 §4.8): none, its DDP header (with M and D), or its DDP and RDMA
// headers (also R).
type Attach uint8

// The attachments.
const (
	AttachNone Attach = iota
	AttachDDP
	AttachRDMA
)

// Want is a case's expected outcome.
type Want struct {
	Kind   WantKind
	Code   rdma.TermCode // for WantTerminate
	Attach Attach        // for WantTerminate: what RFC 5040 §4.8 attaches
}

// Case is one hostile input and what the specification prescribes for it.
type Case struct {
	// Name is "category/what/expected", the expected part naming the
	// Terminate code (e.g. "DDP-1-0x00") or "accepted"/"refused"/"closed".
	Name string
	// Category groups the cases in reports.
	Category string
	// Spec is what the specification (or the project's decision, where it
	// is silent) prescribes, with its section.
	Spec string
	// Needs lists what the case requires; see Need.
	Needs Need
	// Startup adjusts the Initiator's MPA configuration (nil: defaults).
	Startup func(cfg *mpa.Config)
	// Raw, if set, replaces the MPA startup and Script: it drives the
	// connection from its first byte and reports what happened.
	Raw func(ctx context.Context, nc net.Conn, o *Options) Observation
	// Script sends the case's FPDUs after a successful startup, marking
	// the offending segment with Session.SendOffending.
	Script func(s *Session) error
	// Want is the prescribed outcome.
	Want Want
}
