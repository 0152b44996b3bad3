package main

import (
	"encoding/xml"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// What tshark shows with the Lua dissector, read from its PDML output: the
// same records as decodeRecords (wireshark_lua_decode_test.go), one per
// "iwarp" protocol item, and what went wrong in each packet.

// pdmlNode is a proto or field element of tshark's PDML output.
type pdmlNode struct {
	Name     string     `xml:"name,attr"`
	Show     string     `xml:"show,attr"`
	ShowName string     `xml:"showname,attr"`
	Size     int        `xml:"size,attr"`
	Fields   []pdmlNode `xml:"field"`
	Protos   []pdmlNode `xml:"proto"`
}

// walk calls f on n and every element under it.
func (n *pdmlNode) walk(f func(*pdmlNode)) {
	f(n)
	for i := range n.Fields {
		n.Fields[i].walk(f)
	}
	for i := range n.Protos {
		n.Protos[i].walk(f)
	}
}

// find returns the first element named name under n (n included).
func (n *pdmlNode) find(name string) *pdmlNode {
	var found *pdmlNode
	n.walk(func(c *pdmlNode) {
		if found == nil && c.Name == name {
			found = c
		}
	})
	return found
}

type pdmlPacket struct {
	Protos []pdmlNode `xml:"proto"`
}

// pdmlSeverityError is PI_ERROR, the expert severity of errors.
const pdmlSeverityError = 0x00800000

// luaView is what tshark showed of a capture.
type luaView struct {
	records frameRecords
	// problems lists, per frame, malformed marks, Lua errors and
	// protocol items of the built-in iWARP dissectors (the plugin must
	// take their place on the connections it recognises).
	problems map[int][]string
}

// tsharkLuaPDML runs tshark with the plugin (two passes with -2, the way
// Wireshark's GUI dissects a packet again when it is selected) and reads
// its PDML output.
func tsharkLuaPDML(t *testing.T, tshark, file string, twoPass bool, extra ...string) luaView {
	t.Helper()
	// -J keeps the PDML to the layers looked at (and Lua errors).
	args := []string{"-r", file, "-X", "lua_script:" + luaPlugin, "-T", "pdml",
		"-J", "frame iwarp iwarp_mpa iwarp_ddp_rdmap _ws.malformed"}
	if twoPass {
		args = append(args, "-2")
	}
	args = append(args, extra...)
	cmd := exec.Command(tshark, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if s := strings.ReplaceAll(stderr.String(), `Running as user "root" and group "root". This could be dangerous.`, ""); strings.Contains(s, "Lua") {
		t.Fatalf("tshark %s: the plugin did not load:\n%s", strings.Join(args, " "), s)
	}
	v := luaView{records: frameRecords{}, problems: map[int][]string{}}
	dec := xml.NewDecoder(strings.NewReader(string(out)))
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "packet" {
			var p pdmlPacket
			if err := dec.DecodeElement(&p, &se); err != nil {
				t.Fatalf("tshark PDML of %s: %v", file, err)
			}
			v.add(p)
		}
	}
	return v
}

func (v luaView) add(p pdmlPacket) {
	root := pdmlNode{Protos: p.Protos}
	frame := 0
	if n := root.find("frame.number"); n != nil {
		frame, _ = strconv.Atoi(n.Show)
	}
	root.walk(func(n *pdmlNode) {
		switch {
		case n.Name == "_ws.malformed":
			v.problems[frame] = append(v.problems[frame], "malformed: "+n.ShowName)
		case strings.HasPrefix(n.Show, "Lua Error") || strings.HasPrefix(n.ShowName, "Lua Error"):
			v.problems[frame] = append(v.problems[frame], n.Show+n.ShowName)
		case strings.HasPrefix(n.Name, "iwarp_"):
			v.problems[frame] = append(v.problems[frame], "built-in dissector: "+n.Name)
		}
	})
	for i := range p.Protos {
		if pr := &p.Protos[i]; pr.Name == "iwarp" {
			v.records[frame] = append(v.records[frame], pdmlRecord(pr).String())
		}
	}
}

// pdmlShow maps the plugin's fields to the keys of decodeRecords.
var pdmlShow = map[string]string{
	"iwarp.direction": "dir", "iwarp.mpa.rev": "rev", "iwarp.mpa.flags": "flags", "iwarp.mpa.pd_length": "pd_len",
	"iwarp.mpa.ird": "IRD", "iwarp.mpa.ord": "ORD", "iwarp.mpa.p2p": "P2P",
	"iwarp.mpa.ulpdu_length": "len", "iwarp.mpa.markers": "markers", "iwarp.mpa.crc": "crcval",
	"iwarp.ddp.t": "T", "iwarp.ddp.l": "L", "iwarp.ddp.dv": "DV", "iwarp.rdmap.rv": "RV", "iwarp.rdmap.opcode": "op",
	"iwarp.ddp.stag": "STag", "iwarp.ddp.to": "TO", "iwarp.ddp.qn": "QN", "iwarp.ddp.msn": "MSN", "iwarp.ddp.mo": "MO",
	"iwarp.rdmap.inv_stag": "InvSTag", "iwarp.rdmap.sink_stag": "sinkSTag", "iwarp.rdmap.sink_to": "sinkTO",
	"iwarp.rdmap.rdmardsz": "size", "iwarp.rdmap.src_stag": "srcSTag", "iwarp.rdmap.src_to": "srcTO",
	"iwarp.rdmap.atomic.aopcode": "aop", "iwarp.rdmap.atomic.request_id": "reqid",
	"iwarp.rdmap.atomic.stag": "STag", "iwarp.rdmap.atomic.to": "TO",
	"iwarp.rdmap.atomic.add_data": "add", "iwarp.rdmap.atomic.add_mask": "addmask",
	"iwarp.rdmap.atomic.swap_data": "swap", "iwarp.rdmap.atomic.swap_mask": "swapmask",
	"iwarp.rdmap.atomic.compare_data": "cmp", "iwarp.rdmap.atomic.compare_mask": "cmpmask",
	"iwarp.rdmap.atomic.orig_request_id": "reqid", "iwarp.rdmap.atomic.orig_value": "orig",
	"iwarp.rdmap.payload_length": "payload", "iwarp.rdmap.term.ddp_seg_len": "seglen",
	"iwarp.rdmap.term.m": "M", "iwarp.rdmap.term.d": "D", "iwarp.rdmap.term.r": "R",
	"iwarp.rdmap.term.ddp.t": "ddp.T", "iwarp.rdmap.term.ddp.l": "ddp.L", "iwarp.rdmap.term.ddp.dv": "ddp.DV",
	"iwarp.rdmap.term.ddp.rv": "ddp.RV", "iwarp.rdmap.term.ddp.opcode": "ddp.op",
	"iwarp.rdmap.term.ddp.stag": "ddp.STag", "iwarp.rdmap.term.ddp.to": "ddp.TO",
	"iwarp.rdmap.term.ddp.qn": "ddp.QN", "iwarp.rdmap.term.ddp.msn": "ddp.MSN", "iwarp.rdmap.term.ddp.mo": "ddp.MO",
	"iwarp.rdmap.term.rdma.sink_stag": "rdma.sinkSTag", "iwarp.rdmap.term.rdma.sink_to": "rdma.sinkTO",
	"iwarp.rdmap.term.rdma.rdmardsz": "rdma.size", "iwarp.rdmap.term.rdma.src_stag": "rdma.srcSTag",
	"iwarp.rdmap.term.rdma.src_to": "rdma.srcTO",
}

// invalidateOps are the opcodes whose ULP field is the Invalidate STag.
var invalidateOps = map[string]bool{"4": true, "6": true, "20": true, "22": true}

// pdmlRecord builds the record of one "iwarp" protocol item.
func pdmlRecord(pr *pdmlNode) luaRecord {
	r := luaRecord{}
	var rtr []string
	var ulp, termULP, layer, etype, code string
	parseErr := false
	pr.walk(func(n *pdmlNode) {
		if k, ok := pdmlShow[n.Name]; ok {
			r.set(k, n.Show)
		}
		switch n.Name {
		case "iwarp.mpa.request":
			r["kind"] = "Request"
		case "iwarp.mpa.reply":
			r["kind"] = "Reply"
		case "iwarp.mpa.fpdu":
			r["kind"] = "FPDU"
		case "iwarp.mpa.rtr_write", "iwarp.mpa.rtr_read", "iwarp.mpa.rtr_send":
			if n.Show == "1" {
				rtr = append(rtr, map[string]string{"iwarp.mpa.rtr_write": "Write",
					"iwarp.mpa.rtr_read": "Read", "iwarp.mpa.rtr_send": "Send"}[n.Name])
			}
		case "iwarp.mpa.pad":
			r["pad"] = strconv.Itoa(n.Size)
		case "iwarp.mpa.crc.status":
			r["crc"] = map[string]string{"0": "bad", "1": "good", "2": "off"}[n.Show]
		case "iwarp.mpa.rtr":
			r["rtr"] = strings.TrimSuffix(n.Show, " RTR")
		case "iwarp.ddp.ulp":
			ulp = n.Show
		case "iwarp.rdmap.immediate":
			r["imm"] = strings.ReplaceAll(n.Show, ":", "")
		case "iwarp.rdmap.atomic.reserved":
			if v, _ := strconv.ParseUint(strings.TrimPrefix(n.Show, "0x"), 16, 32); v != 0 {
				r.set("rsvd", n.Show)
			}
		case "iwarp.rdmap.term.layout":
			if n.Show == "1" {
				r["layout"] = "siw"
			}
		case "iwarp.rdmap.term.layer":
			layer = map[string]string{"0": "RDMAP", "1": "DDP", "2": "LLP"}[n.Show]
		case "iwarp.rdmap.term.etype":
			etype = n.Show
		case "iwarp.rdmap.term.code":
			code = strings.TrimPrefix(n.Show, "0x")
		case "iwarp.rdmap.term.ddp.ulp":
			termULP = n.Show
		case "_ws.expert.severity":
			if v, _ := strconv.Atoi(n.Show); v >= pdmlSeverityError {
				r["error"] = "1"
			}
		case "iwarp.expert.parse":
			parseErr = true
		case "iwarp.expert.mpa_frame":
			r["kind"] = "frame"
		}
	})
	if r["kind"] == "Request" || r["kind"] == "Reply" {
		if _, ok := r["IRD"]; ok {
			r["RTR"] = strings.Join(rtr, "|")
			if len(rtr) == 0 {
				r["RTR"] = "none"
			}
		}
		return r
	}
	if _, ok := r["pad"]; !ok {
		r["pad"] = "0"
	}
	if ulp != "" && ulp != "0x00000000" {
		r.set("ULP", ulp)
	}
	if termULP != "" {
		if invalidateOps[r["ddp.op"]] {
			r.set("ddp.InvSTag", termULP)
		} else if termULP != "0x00000000" {
			r.set("ddp.ULP", termULP)
		}
	}
	if layer != "" {
		r["term"] = layer + "/" + etype + "/" + code
	}
	if parseErr {
		r.keepOnly(parseErrorKeys)
	}
	return r
}

// needTsharkLua returns the path of tshark, skipping the test when tshark
// is missing or was built without Lua (the plugin needs it).
func needTsharkLua(t *testing.T) string {
	t.Helper()
	tshark := needTshark(t)
	out, err := exec.Command(tshark, "--version").Output()
	if err != nil {
		t.Fatalf("tshark --version: %v", err)
	}
	if !strings.Contains(string(out), "with Lua") {
		t.Skip("tshark was built without Lua: the Wireshark plugin contrib/wireshark/iwarp.lua cannot be loaded")
	}
	return tshark
}

// runTshark runs tshark and returns its standard output.
func runTshark(tshark string, args ...string) (string, error) {
	out, err := exec.Command(tshark, args...).Output()
	return string(out), err
}
