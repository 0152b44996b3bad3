package decode

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/goiwarp/iwarp/internal/mpa"
)

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
