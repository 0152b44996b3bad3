package decode

import (
	"fmt"
	"io"
	"strings"
)

// RenderOptions control the output of Render.
type RenderOptions struct {
	// Payload is the number of payload (and private data) bytes shown in
	// hex; more are marked with "..". 0 shows none.
	Payload int
	// Verbose also lists the connections that are not iWARP.
	Verbose bool
}

// Render decodes the connections (with Each) and writes their items, one
// line each: connection by connection in order, a header line before a
// connection's first item, the two directions merged in capture order.
// Then it writes one summary line per connection. Connections that are not
// iWARP are listed only with Verbose.
func Render(w io.Writer, conns []*Conn, ro RenderOptions) {
	for _, c := range conns {
		first := true
		for it := range c.Each {
			if first {
				fmt.Fprintln(w, Header(c))
				first = false
			}
			fmt.Fprintln(w, Line(c, it, ro))
		}
		if first && (c.MPA || ro.Verbose) {
			fmt.Fprintln(w, Header(c))
		}
	}
	for _, c := range conns {
		if c.MPA || ro.Verbose {
			fmt.Fprintln(w, Summary(c))
		}
	}
}

// Header returns the line that introduces a connection.
func Header(c *Conn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "conn %d: %s <-> %s", c.C.ID, c.C.A, c.C.B)
	switch {
	case c.Initiator >= 0:
		fmt.Fprintf(&b, ", MPA Initiator %s", c.C.Dir[c.Initiator].Src)
	case c.MPA:
		b.WriteString(", MPA Initiator unknown (A is the first sender seen)")
	default:
		b.WriteString(", not iWARP")
	}
	if c.C.SawSYN {
		b.WriteString(", SYN seen")
	} else {
		b.WriteString(", no SYN: capture starts mid-connection")
	}
	for _, n := range c.Notes {
		b.WriteString("; ")
		b.WriteString(n)
	}
	return b.String()
}

// Line returns the line of one item.
func Line(c *Conn, it *Item, ro RenderOptions) string {
	var b strings.Builder
	frame := "-"
	if it.Frame > 0 {
		frame = fmt.Sprint(it.Frame)
	}
	fmt.Fprintf(&b, "%5s c%d %s @%-6d ", frame, c.C.ID, c.Label(it.Dir), it.Off)
	switch it.Kind {
	case KindMPA:
		mpaLine(&b, it, ro)
	case KindFPDU:
		fpduLine(&b, c, it, ro)
	case KindGap:
		fmt.Fprintf(&b, "GAP %s", it.Text)
	case KindResync:
		fmt.Fprintf(&b, "RESYNC %s", it.Text)
	default:
		b.WriteString(it.Text)
	}
	return b.String()
}
