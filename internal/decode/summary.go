package decode

import (
	"fmt"
	"strings"
)

// Summary returns the closing line of a connection.
func Summary(c *Conn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "conn %d summary:", c.C.ID)
	if !c.MPA {
		b.WriteString(" not iWARP")
	} else {
		settings(&b, c)
	}
	for d := range 2 {
		st := &c.Stats[d]
		s := c.C.Dir[d]
		fmt.Fprintf(&b, " | %s %d bytes: %d MPA, %d FPDUs", c.Label(d), s.Len(), st.MPAFrames, st.FPDUs)
		if c.CRCDir[d].Checked() {
			fmt.Fprintf(&b, " (CRC good %d, bad %d)", st.CRCGood, st.CRCBad)
		}
		fmt.Fprintf(&b, ", payload %d, errors %d", st.Payload, st.Errors)
		if st.Markers > 0 {
			fmt.Fprintf(&b, ", markers %d (bad %d)", st.Markers, st.BadMarkers)
		}
		if st.Gaps > 0 {
			fmt.Fprintf(&b, ", gaps %d (%d bytes, %d FPDUs cut)", st.Gaps, st.GapBytes, st.Cut)
		}
		if st.Skipped > 0 {
			fmt.Fprintf(&b, ", skipped %d", st.Skipped)
		}
		if s.Retransmitted+s.Overlapping > 0 {
			fmt.Fprintf(&b, ", retransmitted %d, overlapping %d", s.Retransmitted, s.Overlapping)
		}
		switch {
		case s.SawRST:
			b.WriteString(", RST")
		case s.SawFIN:
			b.WriteString(", FIN")
		}
	}
	for _, n := range c.Warnings {
		b.WriteString("; ")
		b.WriteString(n)
	}
	return b.String()
}

func settings(b *strings.Builder, c *Conn) {
	if c.Startup {
		fmt.Fprintf(b, " MPA rev %d", c.Reply.Rev)
		if c.Rejected {
			b.WriteString(" REJECTED")
		}
	} else {
		b.WriteString(" MPA startup incomplete")
	}
	fmt.Fprintf(b, ", CRC %s, markers %s %s %s %s, ext %s",
		crcName(c.CRCDir[0], c.CRCDir[1]), c.Label(0), onOff(c.Markers[0]), c.Label(1), onOff(c.Markers[1]), c.Ext)
	if c.Request != nil && c.Reply != nil {
		if blk, ok := c.Reply.IRDORD(); ok && blk.P2P {
			fmt.Fprintf(b, ", P2P RTR %s", blk.RTR)
		}
	}
}

func crcName(a, b CRCMode) string {
	name := func(m CRCMode) string {
		switch m {
		case CRCOn:
			return "on"
		case CRCOff:
			return "off"
		case CRCAssumedOn:
			return "on (assumed)"
		case CRCAssumedOff:
			return "off (assumed)"
		}
		return "unknown"
	}
	if a == b {
		return name(a)
	}
	return name(a) + "/" + name(b)
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}
