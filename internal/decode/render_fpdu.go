package decode

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
)

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
		if f.SloppyMarkers > 0 {
			// A sender's slip that receivers ignore (RFC 5044 §4.2).
			fmt.Fprintf(b, "(reserved bits set:%d)", f.SloppyMarkers)
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
	fmt.Fprintf(b, " term=%s/%d/0x%02x(%s; %s) M=%d D=%d R=%d", c.Layer(), uint8(c.Type()), c.Code(), c.TypeName(), c.Name(),
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
