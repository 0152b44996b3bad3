package decode

import (
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
)

// RenderOptions control the output of Render.
type RenderOptions struct {
	// Payload is the number of payload (and private data) bytes shown in
	// hex; more are marked with "..". 0 shows none.
	Payload int
	// Verbose also lists connections that are not iWARP and the capture
	// notes.
	Verbose bool
}

// Render writes every item of the connections, one line each, merged in
// capture order (a connection's header line before its first item), then
// one summary line per connection.
func Render(w io.Writer, conns []*Conn, ro RenderOptions) {
	type ref struct {
		c  *Conn
		it *Item
	}
	var all []ref
	for _, c := range conns {
		if !c.MPA && !ro.Verbose {
			continue
		}
		for i := range c.Items {
			all = append(all, ref{c, &c.Items[i]})
		}
	}
	slices.SortStableFunc(all, func(a, b ref) int {
		if a.it.Frame != b.it.Frame {
			return a.it.Frame - b.it.Frame
		}
		return a.c.C.ID - b.c.C.ID
	})
	seen := map[*Conn]bool{}
	for _, r := range all {
		if !seen[r.c] {
			seen[r.c] = true
			fmt.Fprintln(w, Header(r.c))
		}
		fmt.Fprintln(w, Line(r.c, r.it, ro))
	}
	for _, c := range conns {
		if !c.MPA && !ro.Verbose {
			continue
		}
		if !seen[c] {
			fmt.Fprintln(w, Header(c))
		}
		fmt.Fprintln(w, Summary(c))
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

func mpaLine(b *strings.Builder, it *Item, ro RenderOptions) {
	f := &it.MPA
	if it.MPAErr != nil {
		mpaRawLine(b, it)
		return
	}
	kind, key := "Request", mpa.RequestKey
	if f.Reply {
		kind, key = "Reply", mpa.ReplyKey
	}
	fmt.Fprintf(b, "MPA %s key=%q rev=%d flags=0x%02x[%s] pd_len=%d", kind, key, f.Rev, uint8(f.Flags), flagNames(f.Flags), len(f.PrivateData))
	if blk, ok := f.IRDORD(); ok {
		fmt.Fprintf(b, " IRD=%d ORD=%d P2P=%d RTR=%s", blk.IRD, blk.ORD, bit(blk.P2P), blk.RTR)
	}
	if e := f.Flags.Ext(); e != 0 {
		fmt.Fprintf(b, " ext=0x%x(%s)", uint8(e), e.Normalize())
	}
	if pd := f.ULPData(); len(pd) > 0 {
		fmt.Fprintf(b, " private=%d %s %q", len(pd), preview(pd, ro.Payload), printable(pd, ro.Payload))
	}
	if it.MPAErr != nil {
		fmt.Fprintf(b, " ERROR: %v", it.MPAErr)
	}
}

// mpaRawLine shows the header of a frame that failed to parse as read.
func mpaRawLine(b *strings.Builder, it *Item) {
	raw := it.MPARaw
	n := min(len(raw), len(mpa.RequestKey))
	fmt.Fprintf(b, "MPA frame key=%q", raw[:n])
	if len(raw) >= mpa.HeaderLen {
		fl := mpa.Flags(raw[16])
		fmt.Fprintf(b, " rev=%d flags=0x%02x[%s] pd_len=%d", raw[17], raw[16], flagNames(fl), int(raw[18])<<8|int(raw[19]))
	}
	fmt.Fprintf(b, " (%d bytes) ERROR: %v", it.Size, it.MPAErr)
}

// flagNames names the set flag bits: M C R H, and the reserved nibble.
func flagNames(f mpa.Flags) string {
	var n []string
	for _, x := range []struct {
		f    mpa.Flags
		name string
	}{{mpa.FlagMarkers, "M"}, {mpa.FlagCRC, "C"}, {mpa.FlagReject, "R"}, {mpa.FlagEnhanced, "H"}} {
		if f&x.f != 0 {
			n = append(n, x.name)
		}
	}
	if r := f & mpa.FlagResMask; r != 0 {
		n = append(n, fmt.Sprintf("Res=0x%x", uint8(r)))
	}
	return strings.Join(n, " ")
}

func bit(v bool) int {
	if v {
		return 1
	}
	return 0
}

// preview returns the hex of up to n bytes of b, with ".." when cut.
func preview(b []byte, n int) string {
	if n <= 0 {
		return ".."
	}
	if len(b) <= n {
		return hex.EncodeToString(b)
	}
	return hex.EncodeToString(b[:n]) + ".."
}

// printable returns up to n bytes of b with non-printable bytes as '.'.
func printable(b []byte, n int) string {
	b = b[:min(len(b), max(n, 0))]
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

func fpduLine(b *strings.Builder, c *Conn, it *Item, ro RenderOptions) {
	f := &it.FPDU
	fmt.Fprintf(b, "FPDU len=%d", f.Length)
	u := &it.ULPDU
	if len(f.ULPDU) >= 2 {
		ddpFields(b, &u.DDP, u.Opcode)
	}
	full := len(f.ULPDU) >= f.Length && it.FPDUErr != fpdu.ErrTruncated
	if full && it.ULPDUErr == nil {
		rdmapFields(b, u, ro)
	}
	if full {
		fmt.Fprintf(b, " pad=%d", f.PadLen)
		crcField(b, it)
	}
	if it.Markers {
		fmt.Fprintf(b, " markers=%d", f.Markers)
		if f.BadMarkers > 0 {
			fmt.Fprintf(b, "(FPDUPTR bad:%d)", f.BadMarkers)
		} else if f.Markers > 0 {
			b.WriteString("(FPDUPTR ok)")
		}
	}
	if it.FPDUErr == fpdu.ErrTruncated {
		fmt.Fprintf(b, " TRUNCATED: %s (%d bytes captured)", it.Text, f.Size)
		return
	}
	var errs []string
	if it.FPDUErr != nil && it.FPDUErr != fpdu.ErrCRC {
		errs = append(errs, "framing: "+it.FPDUErr.Error())
	}
	if it.ULPDUErr != nil {
		errs = append(errs, "parse: "+it.ULPDUErr.Error())
	}
	if it.CheckErr != nil {
		errs = append(errs, "check: "+it.CheckErr.Error())
	}
	if len(errs) > 0 {
		b.WriteString(" ERROR: ")
		b.WriteString(strings.Join(errs, "; "))
	}
	if it.Note != "" {
		b.WriteString(" NOTE: ")
		b.WriteString(it.Note)
	}
}

// ddpFields writes the DDP header and the opcode.
func ddpFields(b *strings.Builder, h *wire.DDPHeader, op wire.Opcode) {
	fmt.Fprintf(b, " T=%d L=%d DV=%d RV=%d %s(0x%x)", bit(h.Tagged), bit(h.Last), h.Version,
		h.Control.Version(), op, uint8(op))
	if h.Tagged {
		fmt.Fprintf(b, " STag=0x%08x TO=0x%016x", h.STag, h.TO)
		return
	}
	fmt.Fprintf(b, " QN=%d MSN=%d MO=%d", h.QN, h.MSN, h.MO)
	switch op {
	case wire.OpSendInv, wire.OpSendSEInv, wire.OpSendInvImm, wire.OpSendSEInvImm:
		fmt.Fprintf(b, " InvSTag=0x%08x", h.InvSTag)
	default:
		if h.InvSTag != 0 {
			fmt.Fprintf(b, " ULP=0x%08x", h.InvSTag)
		}
	}
}

// rdmapFields writes the RDMAP header the opcode carries and the payload.
func rdmapFields(b *strings.Builder, u *wire.ULPDU, ro RenderOptions) {
	switch u.Header {
	case wire.HeaderReadRequest:
		readRequest(b, &u.ReadRequest)
	case wire.HeaderReadV2Request:
		r := &u.ReadV2Request
		fmt.Fprintf(b, " size=%d srcSTag=0x%08x srcTO=0x%016x", r.Size, r.SrcSTag, r.SrcTO)
	case wire.HeaderAtomicRequest:
		atomicRequest(b, &u.AtomicRequest)
	case wire.HeaderAtomicResponse:
		r := &u.AtomicResponse
		fmt.Fprintf(b, " reqid=0x%08x orig=0x%016x", r.RequestID, r.OriginalValue)
	case wire.HeaderImmediate:
		fmt.Fprintf(b, " imm=%s", u.Immediate)
	case wire.HeaderTerminate:
		terminate(b, &u.Terminate)
	}
	if u.Header == wire.HeaderNone || len(u.Payload) > 0 {
		fmt.Fprintf(b, " payload=%d", len(u.Payload))
		if len(u.Payload) > 0 && ro.Payload > 0 {
			fmt.Fprintf(b, " data=%s", preview(u.Payload, ro.Payload))
		}
	}
}

func readRequest(b *strings.Builder, r *wire.ReadRequest) {
	fmt.Fprintf(b, " sinkSTag=0x%08x sinkTO=0x%016x size=%d srcSTag=0x%08x srcTO=0x%016x",
		r.SinkSTag, r.SinkTO, r.Size, r.SrcSTag, r.SrcTO)
}

func atomicRequest(b *strings.Builder, r *wire.AtomicRequest) {
	fmt.Fprintf(b, " aop=%s(%d) reqid=0x%08x STag=0x%08x TO=0x%016x", r.AOpCode, uint8(r.AOpCode), r.RequestID, r.STag, r.TO)
	if r.AOpCode == wire.AOpFetchAdd {
		fmt.Fprintf(b, " add=0x%016x addmask=0x%016x", r.AddSwapData, r.AddSwapMask)
	} else {
		fmt.Fprintf(b, " swap=0x%016x swapmask=0x%016x", r.AddSwapData, r.AddSwapMask)
	}
	fmt.Fprintf(b, " cmp=0x%016x cmpmask=0x%016x", r.CompareData, r.CompareMask)
	if r.Reserved != 0 {
		fmt.Fprintf(b, " rsvd=0x%07x", r.Reserved)
	}
}

func terminate(b *strings.Builder, t *wire.Terminate) {
	c := t.Code
	fmt.Fprintf(b, " term=%s/%d/0x%02x(%s; %s) M=%d D=%d R=%d", c.Layer, uint8(c.Type), c.Code, c.TypeName(), c.Name(),
		bit(t.M), bit(t.D), bit(t.R))
	if t.Layout != wire.LayoutRFC {
		fmt.Fprintf(b, " layout=%s(raw %s)", t.Layout, hex.EncodeToString(t.Control[:]))
	}
	if t.SegLenPresent {
		fmt.Fprintf(b, " seglen=%d", t.DDPSegLen)
	}
	if len(t.DDPHeader) > 0 {
		h, _, err := wire.ParseDDPHeader(t.DDPHeader)
		if err != nil {
			fmt.Fprintf(b, " ddphdr=%s", hex.EncodeToString(t.DDPHeader))
		} else {
			b.WriteString(" ddphdr={")
			var sub strings.Builder
			ddpFields(&sub, &h, h.Control.Opcode())
			b.WriteString(strings.TrimPrefix(sub.String(), " "))
			b.WriteString("}")
		}
	}
	if len(t.RDMAHeader) > 0 {
		r, err := wire.ParseReadRequest(t.RDMAHeader)
		if err != nil {
			fmt.Fprintf(b, " rdmahdr=%s", hex.EncodeToString(t.RDMAHeader))
		} else {
			var sub strings.Builder
			readRequest(&sub, &r)
			fmt.Fprintf(b, " rdmahdr={%s}", strings.TrimPrefix(sub.String(), " "))
		}
	}
}

// crcField writes the CRC verdict.
func crcField(b *strings.Builder, it *Item) {
	f := &it.FPDU
	switch {
	case it.CRCMode.Checked() && f.CRC == f.ComputedCRC:
		fmt.Fprintf(b, " crc=good(0x%08x)", f.CRC)
	case it.CRCMode.Checked():
		fmt.Fprintf(b, " crc=BAD(got 0x%08x, computed 0x%08x)", f.CRC, f.ComputedCRC)
	default:
		fmt.Fprintf(b, " crc=not-negotiated(0x%08x)", f.CRC)
	}
	switch it.CRCMode {
	case CRCAssumedOn:
		b.WriteString("[assumed on]")
	case CRCAssumedOff:
		b.WriteString("[assumed off]")
	}
}

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
			fmt.Fprintf(&b, ", gaps %d (%d bytes)", st.Gaps, st.GapBytes)
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
