package mpa

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goiwarp/iwarp/internal/wire"
)

// Compact renderings of frames and decisions for the truth tables in the
// tests and in docs/mpa.md.

// fmtFrame renders a frame header and its block, e.g.
// `Rev2 C H ext=0x3 [P2P Write|Read, IRD 16 ORD 16] pd "x"`.
func fmtFrame(f Frame) string {
	var b strings.Builder
	if f.Reply {
		b.WriteString("Rep ")
	}
	fmt.Fprintf(&b, "Rev%d", f.Rev)
	for _, fl := range []struct {
		f    Flags
		name string
	}{{FlagMarkers, "M"}, {FlagCRC, "C"}, {FlagReject, "R"}, {FlagEnhanced, "H"}} {
		if f.Flags&fl.f != 0 {
			b.WriteString(" " + fl.name)
		}
	}
	if e := f.Flags.Ext(); e != 0 {
		fmt.Fprintf(&b, " ext=%#x", uint8(e))
	}
	if r := f.Flags & FlagResMask &^ Flags(ExtAll); r != 0 {
		fmt.Fprintf(&b, " res=%#x", uint8(r))
	}
	if blk, ok := f.IRDORD(); ok {
		b.WriteString(" [")
		if blk.P2P {
			b.WriteString("P2P ")
		}
		if blk.RTR != 0 {
			b.WriteString(blk.RTR.String() + " ")
		}
		fmt.Fprintf(&b, "%s/%s]", fmtCount(blk.IRD), fmtCount(blk.ORD))
	}
	if pd := f.ULPData(); len(pd) > 0 {
		fmt.Fprintf(&b, " pd %q", pd)
	}
	return b.String()
}

func fmtCount(v uint16) string {
	if v == IRDORDMax {
		return "3FFF"
	}
	return fmt.Sprint(v)
}

// fmtParams renders agreed parameters, e.g.
// `Rev2 CRC, markers→I, IRD/ORD 16/16, RTR Write, ext RFC7306+V2`. Markers
// are named by the side that receives them.
func fmtParams(p Params) string {
	parts := []string{fmt.Sprintf("Rev%d", p.Rev)}
	if p.CRC {
		parts[0] += " CRC"
	}
	toI, toR := p.RecvMarkers, p.SendMarkers
	if !p.Initiator {
		toI, toR = p.SendMarkers, p.RecvMarkers
	}
	if toI {
		parts = append(parts, "markers→I")
	}
	if toR {
		parts = append(parts, "markers→R")
	}
	if p.Enhanced {
		s := fmt.Sprintf("IRD/ORD %d/%d", p.IRD, p.ORD)
		if p.RTRCredit {
			s += " +RTR credit"
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, fmt.Sprintf("IRD/ORD %d/%d (config)", p.IRD, p.ORD))
	}
	if p.P2P {
		parts = append(parts, "RTR "+p.RTR.String())
	}
	if p.Extensions != 0 {
		parts = append(parts, "ext "+p.Extensions.String())
	}
	if p.EchoedFlags {
		parts = append(parts, "echoed")
	}
	return strings.Join(parts, ", ")
}

// fmtOutcome renders an action with its reason.
func fmtOutcome(a Action, err error) string {
	var pe *wire.ProtocolError
	var re *RejectError
	switch {
	case err == nil:
		return a.String()
	case a == ActionTerminate && errors.As(err, &pe):
		return fmt.Sprintf("terminate LLP 0x%02X (%s)", pe.Code.Code(), pe.What)
	case errors.As(err, &pe):
		return fmt.Sprintf("%s (%s)", a, pe.What)
	case errors.As(err, &re):
		return fmt.Sprintf("rejected by peer, pd %q", re.PrivateData)
	}
	return a.String() + " (" + err.Error() + ")"
}
