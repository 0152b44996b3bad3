package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// What `iwarp decode -payload 0` prints, as records comparable with what
// the Lua dissector shows (wireshark_lua_pdml_test.go): one record per MPA
// frame and FPDU, keyed by the frame that carried its last byte, the order
// of tshark's reassembly too.

// luaRecord is one MPA frame or FPDU as "key=value" pairs: the fields of
// the line of `iwarp decode` (and of the dissector's tree), numbers in
// decimal.
type luaRecord map[string]string

// String returns the pairs sorted by key.
func (r luaRecord) String() string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = k + "=" + r[k]
	}
	return strings.Join(keys, " ")
}

// set stores v under k, hexadecimal numbers ("0x...") converted to decimal.
func (r luaRecord) set(k, v string) {
	if strings.HasPrefix(v, "0x") {
		if n, err := strconv.ParseUint(v[2:], 16, 64); err == nil {
			v = strconv.FormatUint(n, 10)
		}
	}
	r[k] = v
}

// parseErrorKeys are the keys a record with a parse error keeps: `iwarp
// decode` prints no RDMAP header for a ULPDU that does not parse.
var parseErrorKeys = []string{"dir", "kind", "len", "T", "L", "DV", "RV", "op", "STag", "TO", "QN", "MSN", "MO",
	"InvSTag", "ULP", "pad", "crc", "crcval", "markers", "error"}

// keepOnly deletes every key but keys.
func (r luaRecord) keepOnly(keys []string) {
	for k := range r {
		if !slices.Contains(keys, k) {
			delete(r, k)
		}
	}
}

// frameRecords maps a frame number to the records it completes, in order.
type frameRecords map[int][]string

func (fr frameRecords) count() int {
	n := 0
	for _, rs := range fr {
		n += len(rs)
	}
	return n
}

var (
	decodeItem    = regexp.MustCompile(`^\s*(\d+) c\d+ (\S+) @\d+\s+(MPA Request|MPA Reply|MPA frame|FPDU)\b(.*)$`)
	decodeOpcode  = regexp.MustCompile(` RV=\d+ [^=]*?\(0x([0-9a-f]+)\)`)
	decodeCRC     = regexp.MustCompile(` crc=(good|BAD|not-negotiated)\((?:got )?(0x[0-9a-f]+)[^)]*\)(\[assumed (?:on|off)\])?`)
	decodeTerm    = regexp.MustCompile(` term=(\w+)/(\d+)/0x([0-9a-f]+)\([^)]*\)`)
	decodeLayout  = regexp.MustCompile(` layout=(\w+)\(raw [0-9a-f]+\)`)
	decodeAOp     = regexp.MustCompile(` aop=[\w ]+\((\d+)\)`)
	decodeMarkers = regexp.MustCompile(` markers=(\d+)(\([^)]*\))*`)
	decodeNested  = regexp.MustCompile(` (ddphdr|rdmahdr)=\{([^}]*)\}`)
	decodePair    = regexp.MustCompile(`(\w+)=(\S+)`)
	decodeRTR     = regexp.MustCompile(`ready-to-receive \((\w+) RTR\)`)
)

// decodeRecords runs `iwarp decode -payload 0` on a capture and returns
// its MPA frames and FPDUs by frame.
func decodeRecords(t *testing.T, file string) frameRecords {
	t.Helper()
	code, out, errOut := runCLI(t, "decode", "-payload", "0", file)
	if code != exitOK {
		t.Fatalf("iwarp decode %s: exit %d\n%s", file, code, errOut)
	}
	fr := frameRecords{}
	for line := range strings.SplitSeq(out, "\n") {
		m := decodeItem.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		frame, _ := strconv.Atoi(m[1])
		r := luaRecord{}
		if m[2] == "I>R" || m[2] == "R>I" {
			r["dir"] = m[2]
		}
		if m[3] == "FPDU" {
			decodeFPDU(r, m[4])
		} else {
			decodeMPA(r, m[3], m[4])
		}
		fr[frame] = append(fr[frame], r.String())
	}
	return fr
}

// decodeMPA fills r from the rest of an MPA line.
func decodeMPA(r luaRecord, kind, rest string) {
	r["kind"] = strings.TrimPrefix(kind, "MPA ")
	if i := strings.Index(rest, " ERROR: "); i >= 0 {
		r["error"] = "1"
		rest = rest[:i]
	}
	for _, p := range decodePair.FindAllStringSubmatch(rest, -1) {
		switch p[1] {
		case "rev", "pd_len", "IRD", "ORD", "P2P", "RTR":
			r.set(p[1], p[2])
		case "flags":
			r.set("flags", p[2][:4]) // 0xNN[names]
		}
	}
}

// decodeFPDU fills r from the rest of an FPDU line.
func decodeFPDU(r luaRecord, rest string) {
	r["kind"] = "FPDU"
	parseErr := false
	if i := strings.Index(rest, " NOTE: "); i >= 0 {
		if m := decodeRTR.FindStringSubmatch(rest[i:]); m != nil {
			r["rtr"] = m[1]
		}
		rest = rest[:i]
	}
	if i := strings.Index(rest, " ERROR: "); i >= 0 {
		r["error"] = "1"
		parseErr = strings.Contains(rest[i:], "parse: ")
		rest = rest[:i]
	}
	if m := decodeCRC.FindStringSubmatch(rest); m != nil {
		r["crc"] = map[string]string{"good": "good", "BAD": "bad", "not-negotiated": "off"}[m[1]]
		if m[1] == "BAD" {
			r["error"] = "1"
		}
		r.set("crcval", m[2])
		rest = strings.Replace(rest, m[0], "", 1)
	}
	if m := decodeOpcode.FindStringSubmatch(rest); m != nil {
		r.set("op", "0x"+m[1])
		rest = strings.Replace(rest, m[0], " RV="+strings.Fields(m[0])[0][3:], 1)
	}
	if m := decodeTerm.FindStringSubmatch(rest); m != nil {
		r["term"] = m[1] + "/" + m[2] + "/" + m[3]
		rest = strings.Replace(rest, m[0], "", 1)
	}
	if m := decodeLayout.FindStringSubmatch(rest); m != nil {
		r["layout"] = m[1]
		rest = strings.Replace(rest, m[0], "", 1)
	}
	if m := decodeAOp.FindStringSubmatch(rest); m != nil {
		r["aop"] = m[1]
		rest = strings.Replace(rest, m[0], "", 1)
	}
	if m := decodeMarkers.FindStringSubmatch(rest); m != nil {
		r["markers"] = m[1]
		rest = strings.Replace(rest, m[0], "", 1)
	}
	for _, m := range decodeNested.FindAllStringSubmatch(rest, -1) {
		prefix := "ddp."
		if m[1] == "rdmahdr" {
			prefix = "rdma."
		}
		inner := m[2]
		if o := decodeOpcode.FindStringSubmatch(" " + inner); o != nil {
			r.set(prefix+"op", "0x"+o[1])
		}
		for _, p := range decodePair.FindAllStringSubmatch(inner, -1) {
			r.set(prefix+p[1], p[2])
		}
		rest = strings.Replace(rest, m[0], "", 1)
	}
	for _, p := range decodePair.FindAllStringSubmatch(rest, -1) {
		r.set(p[1], p[2])
	}
	if parseErr {
		r.keepOnly(parseErrorKeys)
	}
}
