package conform

import (
	"fmt"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// ObsKind is what the responder did.
type ObsKind uint8

// The observations.
const (
	// ObsTerminate: it sent a Terminate (then usually closed).
	ObsTerminate ObsKind = iota + 1
	// ObsAlive: no Terminate, and the connection kept answering.
	ObsAlive
	// ObsClosed: it closed (or reset) the connection without a Terminate.
	ObsClosed
	// ObsSilent: it neither answered nor closed within the wait.
	ObsSilent
	// ObsRefused: the startup ended without a successful Reply.
	ObsRefused
	// ObsStarted: the startup completed (for startup cases).
	ObsStarted
	// ObsError: the suite itself could not run the case (dial failed...).
	ObsError
)

// Observation is what the responder did in one case.
type Observation struct {
	Kind ObsKind
	// Terminate is the received Terminate (ObsTerminate), and
	// TerminateULPDU its exact bytes from the DDP header on.
	Terminate      wire.Terminate
	TerminateULPDU []byte
	// Detail says more: the error that ended the startup, the probe's
	// result, how long the close took.
	Detail string
}

// String describes the observation in one line.
func (o Observation) String() string {
	switch o.Kind {
	case ObsTerminate:
		t := o.Terminate
		s := fmt.Sprintf("Terminate %s (%s)", codeName(t.Code), t.Code.Name())
		if t.Layout == wire.LayoutSiw {
			s += fmt.Sprintf(", siw layout, control % x", t.Control[:])
		}
		if t.Ambiguous {
			s += ", ambiguous layout"
		}
		if o.Detail != "" {
			s += "; " + o.Detail
		}
		return s
	case ObsAlive:
		return "accepted: no Terminate, connection still answering; " + o.Detail
	case ObsClosed:
		return "closed without Terminate; " + o.Detail
	case ObsSilent:
		return "no answer and no close; " + o.Detail
	case ObsRefused:
		return "startup refused; " + o.Detail
	case ObsStarted:
		return "startup completed; " + o.Detail
	default:
		return "suite error: " + o.Detail
	}
}

// codeName is the compact code notation used in case names: layer-type-code.
func codeName(c rdma.TermCode) string {
	layer := [...]string{"RDMAP", "DDP", "LLP"}
	l := fmt.Sprintf("layer%d", c.Layer())
	if int(c.Layer()) < len(layer) {
		l = layer[c.Layer()]
	}
	return fmt.Sprintf("%s-%d-0x%02X", l, c.Type(), c.Code())
}
