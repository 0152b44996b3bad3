package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/decode"
	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/vectors"
	"github.com/goiwarp/iwarp/internal/wire"
)

// The tshark comparison: every FPDU our decoder finds must show the same
// opcode, STag, TO, QN, MSN, MO and CRC trailer in tshark 4.0 (Debian 12),
// and tshark's CRC verdict must equal ours. tshark masks the V2 5-bit
// opcodes to their low 4 bits, so ours are compared masked too.

// tsharkArgs are the options that make tshark find MPA on any port and
// keep Send payloads away from the SMB Direct and RPC-over-RDMA
// dissectors (internal/vectors/testdata/README.md).
var tsharkArgs = []string{"-o", "tcp.try_heuristic_first:TRUE",
	"--disable-heuristic", "rpcrdma_iwarp", "--disable-heuristic", "smb_direct_iwarp"}

// tsharkFields are compared per frame, field by field, as ordered lists
// (tshark joins the values of one field with ';' and leaves absent ones
// out, so lists of different fields do not line up with each other).
var tsharkFields = []string{"iwarp_rdma.opcode", "iwarp_ddp.stag", "iwarp_ddp.tagged_offset",
	"iwarp_ddp.qn", "iwarp_ddp.msn", "iwarp_ddp.mo", "iwarp_mpa.crc_check", "iwarp_mpa.crc"}

// tsharkRDMAPFields are the RDMAP headers' fields: the Read Request and
// the RFC 7306 Atomic Request and Response. They are compared on captures
// without V2 frames only: Wireshark reads a Read V2 Request (0x11) as a
// truncated Read Request.
var tsharkRDMAPFields = []string{"iwarp_rdma.sinkstag", "iwarp_rdma.sinkto", "iwarp_rdma.rdmardsz",
	"iwarp_rdma.srcstag", "iwarp_rdma.srcto", "iwarp_rdma.atomic.opcode",
	"iwarp_rdma.atomic.request_identifier", "iwarp_rdma.atomic.remote_stag",
	"iwarp_rdma.atomic.remote_tagged_offset", "iwarp_rdma.atomic.add_data", "iwarp_rdma.atomic.add_mask",
	"iwarp_rdma.atomic.swap_data", "iwarp_rdma.atomic.swap_mask", "iwarp_rdma.atomic.compare_data",
	"iwarp_rdma.atomic.compare_mask", "iwarp_rdma.atomic.original_request_identifier",
	"iwarp_rdma.atomic.original_remote_data_value"}

// allTsharkFields is every field read from tshark.
var allTsharkFields = append(append([]string(nil), tsharkFields...), tsharkRDMAPFields...)

// frameFields maps a frame number to field name to the list of values.
type frameFields map[int]map[string][]string

func (ff frameFields) add(frame int, field, value string) {
	if ff[frame] == nil {
		ff[frame] = map[string][]string{}
	}
	ff[frame][field] = append(ff[frame][field], value)
}

func needTshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed: the Wireshark comparison needs tshark 4.0 or later in PATH (apt-get install tshark)")
	}
	return p
}

// tsharkRead runs tshark -T fields on a capture.
func tsharkRead(t *testing.T, tshark, file string) frameFields {
	t.Helper()
	args := append([]string{"-r", file}, tsharkArgs...)
	args = append(args, "-Y", "iwarp_mpa.fpdu", "-T", "fields", "-E", "separator=/t", "-E", "aggregator=;", "-e", "frame.number")
	for _, f := range allTsharkFields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark %v: %v", args, err)
	}
	ff := frameFields{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != len(allTsharkFields)+1 {
			t.Fatalf("tshark line %q: %d columns", sc.Text(), len(cols))
		}
		var frame int
		fmt.Sscan(cols[0], &frame)
		for i, f := range allTsharkFields {
			if cols[i+1] == "" {
				continue
			}
			for v := range strings.SplitSeq(cols[i+1], ";") {
				ff.add(frame, f, v)
			}
		}
	}
	return ff
}

var crcVerdict = regexp.MustCompile(`name="iwarp_mpa.crc_check" showname="[^"]*\((Good|Bad) CRC32`)

// tsharkCRCVerdicts returns, per frame, tshark's CRC verdicts in order.
// -T fields has no field for the verdict (tshark 4.0 registers no status
// field for the MPA CRC), so it is read from the PDML shownames.
func tsharkCRCVerdicts(t *testing.T, tshark, file string) map[int][]string {
	t.Helper()
	args := append([]string{"-r", file}, tsharkArgs...)
	args = append(args, "-Y", "iwarp_mpa.crc_check", "-T", "pdml")
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark %v: %v", args, err)
	}
	v := map[int][]string{}
	for _, pkt := range strings.Split(string(out), "<packet>")[1:] {
		var frame int
		if m := regexp.MustCompile(`name="frame.number" [^>]*show="(\d+)"`).FindStringSubmatch(pkt); m != nil {
			fmt.Sscan(m[1], &frame)
		}
		for _, m := range crcVerdict.FindAllStringSubmatch(pkt, -1) {
			v[frame] = append(v[frame], strings.ToLower(m[1]))
		}
	}
	return v
}

// ourFields decodes a capture and returns the same fields as tshark would,
// with our CRC verdicts.
func ourFields(t *testing.T, file string) (frameFields, map[int][]string) {
	t.Helper()
	a, err := capture.ReadFile(file, capture.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ff := frameFields{}
	verdicts := map[int][]string{}
	for _, c := range a.Conns() {
		dc := decode.DecodeConn(c, decode.Options{})
		for _, it := range dc.Items {
			if it.Kind != decode.KindFPDU || it.ULPDUErr != nil || len(it.FPDU.ULPDU) < it.FPDU.Length {
				continue
			}
			h := &it.ULPDU.DDP
			if h.Control.Version() == wire.RDMAPVersion2 {
				ff.add(it.Frame, "rv2", "1")
			}
			ff.add(it.Frame, "iwarp_rdma.opcode", fmt.Sprintf("0x%02x", uint8(it.ULPDU.Opcode)&0x0F))
			if h.Tagged {
				ff.add(it.Frame, "iwarp_ddp.stag", fmt.Sprintf("0x%08x", h.STag))
				ff.add(it.Frame, "iwarp_ddp.tagged_offset", fmt.Sprintf("0x%016x", h.TO))
			} else {
				ff.add(it.Frame, "iwarp_ddp.qn", fmt.Sprint(h.QN))
				ff.add(it.Frame, "iwarp_ddp.msn", fmt.Sprint(h.MSN))
				ff.add(it.Frame, "iwarp_ddp.mo", fmt.Sprint(h.MO))
			}
			rdmapFields(ff, it.Frame, &it.ULPDU)
			// tshark shows the trailer read big-endian.
			crcBE := fmt.Sprintf("0x%08x", swap32(it.FPDU.CRC))
			if it.CRCMode.Checked() {
				ff.add(it.Frame, "iwarp_mpa.crc_check", crcBE)
				v := "bad"
				if it.CRCGood() {
					v = "good"
				}
				verdicts[it.Frame] = append(verdicts[it.Frame], v)
			} else {
				ff.add(it.Frame, "iwarp_mpa.crc", crcBE)
			}
		}
	}
	return ff, verdicts
}

// rdmapFields adds the RDMAP header fields as tshark formats them.
func rdmapFields(ff frameFields, frame int, u *wire.ULPDU) {
	switch u.Header {
	case wire.HeaderReadRequest:
		r := &u.ReadRequest
		ff.add(frame, "iwarp_rdma.sinkstag", fmt.Sprintf("0x%08x", r.SinkSTag))
		ff.add(frame, "iwarp_rdma.sinkto", fmt.Sprintf("0x%016x", r.SinkTO))
		ff.add(frame, "iwarp_rdma.rdmardsz", fmt.Sprint(r.Size))
		ff.add(frame, "iwarp_rdma.srcstag", fmt.Sprintf("0x%08x", r.SrcSTag))
		ff.add(frame, "iwarp_rdma.srcto", fmt.Sprintf("0x%016x", r.SrcTO))
	case wire.HeaderAtomicRequest:
		a := &u.AtomicRequest
		ff.add(frame, "iwarp_rdma.atomic.opcode", fmt.Sprint(uint8(a.AOpCode)))
		ff.add(frame, "iwarp_rdma.atomic.request_identifier", fmt.Sprint(a.RequestID))
		ff.add(frame, "iwarp_rdma.atomic.remote_stag", fmt.Sprint(a.STag))
		ff.add(frame, "iwarp_rdma.atomic.remote_tagged_offset", fmt.Sprint(a.TO))
		if a.AOpCode == wire.AOpFetchAdd {
			ff.add(frame, "iwarp_rdma.atomic.add_data", fmt.Sprint(a.AddSwapData))
			ff.add(frame, "iwarp_rdma.atomic.add_mask", fmt.Sprintf("0x%016x", a.AddSwapMask))
		} else {
			ff.add(frame, "iwarp_rdma.atomic.swap_data", fmt.Sprint(a.AddSwapData))
			ff.add(frame, "iwarp_rdma.atomic.swap_mask", fmt.Sprintf("0x%016x", a.AddSwapMask))
		}
		ff.add(frame, "iwarp_rdma.atomic.compare_data", fmt.Sprint(a.CompareData))
		ff.add(frame, "iwarp_rdma.atomic.compare_mask", fmt.Sprintf("0x%016x", a.CompareMask))
	case wire.HeaderAtomicResponse:
		r := &u.AtomicResponse
		ff.add(frame, "iwarp_rdma.atomic.original_request_identifier", fmt.Sprint(r.RequestID))
		ff.add(frame, "iwarp_rdma.atomic.original_remote_data_value", fmt.Sprint(r.OriginalValue))
	}
}

func swap32(v uint32) uint32 { return v>>24 | v>>8&0xFF00 | v<<8&0xFF0000 | v<<24 }

// compareWithTshark checks one capture; it returns the number of FPDUs
// compared.
func compareWithTshark(t *testing.T, tshark, file string) int {
	t.Helper()
	ours, ourV := ourFields(t, file)
	theirs := tsharkRead(t, tshark, file)
	theirV := tsharkCRCVerdicts(t, tshark, file)
	frames := map[int]bool{}
	for f := range ours {
		frames[f] = true
	}
	for f := range theirs {
		frames[f] = true
	}
	fields := tsharkFields
	if !hasV2(ours) {
		fields = allTsharkFields
	}
	n := 0
	for _, f := range slices.Sorted(func(yield func(int) bool) {
		for k := range frames {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, field := range fields {
			a, b := ours[f][field], theirs[f][field]
			if !slices.Equal(a, b) {
				t.Errorf("%s frame %d %s: ours %v, tshark %v", filepath.Base(file), f, field, a, b)
			}
		}
		if !slices.Equal(ourV[f], theirV[f]) {
			t.Errorf("%s frame %d CRC verdicts: ours %v, tshark %v", filepath.Base(file), f, ourV[f], theirV[f])
		}
		n += len(ours[f]["iwarp_rdma.opcode"])
	}
	return n
}

// hasV2 reports whether any FPDU decoded from the capture is RDMAP
// version 2 (recorded by ourFields under the pseudo-field "rv2").
func hasV2(ff frameFields) bool {
	for _, m := range ff {
		if len(m["rv2"]) > 0 {
			return true
		}
	}
	return false
}

func TestDecodeMatchesTsharkOnCaptures(t *testing.T) {
	tshark := needTshark(t)
	// The captures of siw's own traffic (siw against siw, on eth0 and lo).
	files, _ := filepath.Glob(filepath.Join(captureDir, "*_[el][to]*.pcap"))
	if len(files) == 0 {
		t.Fatalf("no siw captures in %s", captureDir)
	}
	total := 0
	for _, f := range files {
		total += compareWithTshark(t, tshark, f)
	}
	t.Logf("%d FPDUs compared over %d captures", total, len(files))
	if total < 50 {
		t.Errorf("only %d FPDUs compared over %d captures", total, len(files))
	}
}

// vectorFrames reads a vector file of frames.
func vectorFrames(t *testing.T, file string) []vectors.Frame {
	t.Helper()
	fs, err := vectors.ReadFile(filepath.Join(vectorDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// writeVectorPcap synthesizes a capture of a vector file's connection:
// Ethernet, IPv4 or IPv6, TCP segments of at most mss bytes, and with
// retransmit every segment sent twice plus an overlapping resend. file is
// the name of one of vectors.FrameFiles.
func writeVectorPcap(t *testing.T, file, out string, v6, retransmit bool, mss int) {
	t.Helper()
	recs := vectorFrames(t, file)
	var buf bytes.Buffer
	w, err := capture.NewPcapWriter(&buf, capture.LinkEthernet)
	if err != nil {
		t.Fatal(err)
	}
	fl := &capture.Flow{W: w, MSS: mss, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Client: netip.MustParseAddrPort("192.0.2.1:40001"), Server: netip.MustParseAddrPort("192.0.2.2:7000")}
	if v6 {
		fl.Client = netip.MustParseAddrPort("[2001:db8::1]:40001")
		fl.Server = netip.MustParseAddrPort("[2001:db8::2]:7000")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fl.Open())
	var sent [2]int
	for _, r := range recs {
		side := 1
		if r.Initiator() {
			side = 0
		}
		must(fl.Send(side, r.Bytes))
		if retransmit && len(r.Bytes) > 4 {
			must(fl.Resend(side, sent[side], len(r.Bytes)))
			must(fl.Resend(side, sent[side]+len(r.Bytes)/2, len(r.Bytes)-len(r.Bytes)/2))
		}
		sent[side] += len(r.Bytes)
	}
	must(fl.Close())
	must(os.WriteFile(out, buf.Bytes(), 0o644))
}

func TestDecodeMatchesTsharkOnVectorCaptures(t *testing.T) {
	tshark := needTshark(t)
	dir := t.TempDir()
	for _, f := range vectors.FrameFiles {
		for _, variant := range []struct {
			name     string
			v6, retx bool
			mss      int
		}{
			{"ipv4", false, false, 1460},
			{"ipv6", true, false, 1460},
			{"ipv4-small-segments", false, false, 100},
			{"ipv4-retransmit", false, true, 1460},
			{"ipv6-retransmit", true, true, 1460},
		} {
			name := strings.TrimSuffix(f, ".tsv") + "-" + variant.name
			t.Run(name, func(t *testing.T) {
				out := filepath.Join(dir, name+".pcap")
				writeVectorPcap(t, f, out, variant.v6, variant.retx, variant.mss)
				n := compareWithTshark(t, tshark, out)
				if want := len(vectorFrames(t, f)) - 2; n != want {
					t.Errorf("%d FPDUs compared, want %d (every vector record but the MPA frames)", n, want)
				}
			})
		}
	}
}

// TestVectorCapturesDecodeLikeVectors checks, without tshark, that the
// synthesized captures decode to the same FPDUs as the vector files read
// directly, whatever the segmentation, IP version and retransmissions.
func TestVectorCapturesDecodeLikeVectors(t *testing.T) {
	dir := t.TempDir()
	for _, f := range vectors.FrameFiles {
		direct, err := os.ReadFile(filepath.Join(vectorDir, f))
		if err != nil {
			t.Fatal(err)
		}
		a, err := decode.ReadText(bytes.NewReader(direct))
		if err != nil {
			t.Fatal(err)
		}
		want := fpduSummary(decode.DecodeConn(a.Conns()[0], decode.Options{}))
		for _, v6 := range []bool{false, true} {
			for _, retx := range []bool{false, true} {
				out := filepath.Join(dir, "v.pcap")
				writeVectorPcap(t, f, out, v6, retx, 61)
				a, err := capture.ReadFile(out, capture.Limits{})
				if err != nil || len(a.Conns()) != 1 {
					t.Fatalf("%s: %v, %d conns", f, err, len(a.Conns()))
				}
				got := fpduSummary(decode.DecodeConn(a.Conns()[0], decode.Options{}))
				if !slices.Equal(got, want) {
					t.Errorf("%s v6=%v retransmit=%v:\n got %q\nwant %q", f, v6, retx, got, want)
				}
			}
		}
	}
}

// fpduSummary lists each direction's items by stream offset, without frame
// numbers.
func fpduSummary(c *decode.Conn) []string {
	var s []string
	for _, it := range c.Items {
		desc := fmt.Sprintf("%d@%d kind=%d", it.Dir, it.Off, it.Kind)
		if it.Kind == decode.KindFPDU {
			desc += fmt.Sprintf(" len=%d op=%s crcgood=%v err=%v/%v/%v", it.FPDU.Length, it.ULPDU.Opcode,
				it.CRCGood(), it.FPDUErr, it.ULPDUErr, it.CheckErr)
		}
		s = append(s, desc)
	}
	slices.Sort(s)
	return s
}

// markedFPDU returns where the CRC field of an FPDU carrying ulpdu octets
// starts and where the FPDU ends, sent from stream offset pos with a
// marker in front of every 512th octet and one before the CRC field when
// it is due there (RFC 5044 §4.3, docs/fpdu.md decision 2).
func markedFPDU(pos, ulpdu int) (crcAt, end int) {
	p, l := pos, fpdu.HeaderLen+ulpdu+fpdu.PadLen(ulpdu)
	for l > 0 {
		if p%fpdu.MarkerInterval == 0 {
			p += fpdu.MarkerLen
		}
		k := min(l, fpdu.MarkerInterval-p%fpdu.MarkerInterval)
		p, l = p+k, l-k
	}
	if p%fpdu.MarkerInterval == 0 {
		p += fpdu.MarkerLen
	}
	return p, p + fpdu.CRCLen
}

// steer picks a payload size from 1 to 1400 for a message whose FPDU
// carries hdr octets of headers before it and is sent from stream offset
// *pos, followed by FPDUs with the ULPDU sizes then: none of them may end
// on a marker position (with a marker inside, Wireshark 4.0 counts the next
// FPDU's leading marker in this one, and oneFPDUPerSegment would move it to
// a connection of its own, out of the field-by-field comparison), and with
// target the first FPDU's CRC field must follow a marker. It advances *pos
// past them all.
func steer(rng *rand.Rand, pos *int, hdr int, target bool, then ...int) int {
	first := 1 + rng.IntN(1400)
	for i := range 1400 {
		n := 1 + (first+i)%1400
		crcAt, end := markedFPDU(*pos, hdr+n)
		ok := end%fpdu.MarkerInterval != 0 && (!target || crcAt%fpdu.MarkerInterval == fpdu.MarkerLen)
		for _, u := range then {
			_, end = markedFPDU(end, u)
			ok = ok && end%fpdu.MarkerInterval != 0
		}
		if ok {
			*pos = end
			return n
		}
	}
	panic("no payload size fits")
}

// countingConn counts the octets written and read through it and keeps
// the first 20 of each direction (the MPA frame's header).
type countingConn struct {
	net.Conn
	mu          sync.Mutex
	wrote, read int
	head        [2][]byte
}

// Write counts p before writing it: the peer may answer, and the answer
// complete an operation, before Write returns.
func (c *countingConn) Write(p []byte) (int, error) {
	c.count(0, p)
	n, err := c.Conn.Write(p)
	if n < len(p) {
		c.mu.Lock()
		c.wrote -= len(p) - n
		c.mu.Unlock()
	}
	return n, err
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.count(1, p[:n])
	return n, err
}

func (c *countingConn) count(dir int, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.head[dir] = append(c.head[dir], b[:min(len(b), 20-len(c.head[dir]))]...)
	if dir == 0 {
		c.wrote += len(b)
	} else {
		c.read += len(b)
	}
}

// positions returns the stream offsets, counted from each direction's
// first FPDU, of the next octet the Initiator sends and receives.
func (c *countingConn) positions(t *testing.T) (sent, received int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.head[0]) < 20 || len(c.head[1]) < 20 {
		t.Fatal("no MPA frames seen")
	}
	frame := func(h []byte) int { return 20 + (int(h[18])<<8 | int(h[19])) }
	return c.wrote - frame(c.head[0]), c.read - frame(c.head[1])
}

// markerCapture records, through iwarp.Capture, a live connection between
// two QPs with MPA markers in both directions and CRC, running Sends,
// RDMA Writes and RDMA Reads, each of one FPDU, whose sizes are steered
// from the stream positions: a third of the rounds put a marker just
// before the CRC field of the Write and of the Read Response (RFC 5044
// §4.3, §4.4), and no FPDU ends on a marker position (see steer). It
// returns the capture file.
func markerCapture(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "markers-crc.pcap")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	capt, err := iwarp.NewCapture(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	type side struct {
		pd *iwarp.PD
		cq *iwarp.CQ
		qp *iwarp.QP
	}
	newSide := func() side {
		dev := iwarp.NewDevice(nil)
		t.Cleanup(func() { dev.Close() })
		pd, err := dev.AllocPD()
		must(err)
		cq, err := dev.NewCQ(256, nil)
		must(err)
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 64, RecvQueueDepth: 64})
		must(err)
		return side{pd, cq, qp}
	}
	ini, resp := newSide(), newSide()
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	must(err)
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			err = req.Accept(ctx, resp.qp, &iwarp.ConnOptions{Interop: &iwarp.InteropOptions{Markers: true}})
		}
		accepted <- err
	}()
	var cc *countingConn
	dial := capt.Dialer(nil)
	counted := func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc = &countingConn{Conn: nc}
		return cc, nil
	}
	must(ini.qp.Connect(ctx, "tcp", ln.Addr().String(), &iwarp.ConnOptions{Dialer: counted, Interop: &iwarp.InteropOptions{Markers: true}}))
	must(<-accepted)
	if a := ini.qp.Attributes(); !a.CRC || !a.SendMarkers || !a.RecvMarkers {
		t.Fatalf("negotiated CRC %v, markers sent %v, received %v", a.CRC, a.SendMarkers, a.RecvMarkers)
	}

	const most = 1400
	src := make([]byte, most)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	smr, err := ini.pd.RegisterMemory(src, 0)
	must(err)
	sink := make([]byte, most)
	kmr, err := ini.pd.RegisterMemory(sink, iwarp.AccessLocalWrite)
	must(err)
	rmr, err := resp.pd.RegisterMemory(make([]byte, most), iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead|iwarp.AccessLocalWrite)
	must(err)
	rng := rand.New(rand.NewPCG(23, 5044))
	readRequest := wire.UntaggedHdrLen + wire.ReadRequestLen
	for round := range 150 {
		sent, received := cc.positions(t)
		target := round%3 == 0
		if round%10 == 5 { // a Send into the Responder's memory
			n := steer(rng, &sent, wire.UntaggedHdrLen, target)
			must(resp.qp.PostRecv(iwarp.RecvWR{ID: uint64(round), SGL: []iwarp.SGE{rmr.SGE(0, most)}}))
			must(ini.qp.Send(ctx, smr.SGE(0, n)))
			if c, err := resp.cq.Next(ctx); err != nil || c.Status != iwarp.StatusSuccess || c.Len != n {
				t.Fatalf("Send of %d: %+v, %v", n, c, err)
			}
		}
		nw := steer(rng, &sent, wire.TaggedHdrLen, target, readRequest)
		nr := steer(rng, &received, wire.TaggedHdrLen, target)
		remote, err := rmr.RemoteSlice(0, nw)
		must(err)
		must(ini.qp.Write(ctx, remote, smr.SGE(0, nw)))
		remote, err = rmr.RemoteSlice(0, nr)
		must(err)
		clear(sink)
		must(ini.qp.Read(ctx, remote, kmr.SGE(0, nr)))
		if nr <= nw && !bytes.Equal(sink[:nr], src[:nr]) {
			t.Fatalf("round %d: the %d bytes read back differ", round, nr)
		}
		if s, r := cc.positions(t); s != sent || r != received {
			t.Fatalf("round %d: streams at %d and %d, predicted %d and %d (not one FPDU per message?)", round, s, r, sent, received)
		}
	}
	must(ini.qp.Disconnect(ctx))
	<-resp.qp.Done()
	must(capt.Close())
	return file
}

// With markers, Wireshark 4.0's MPA dissector (epan/dissectors/
// packet-iwarp-mpa.c) frames an FPDU from the TCP segment that carries it:
// it places markers from the segment's sequence number, takes the
// segment's length as the FPDU's, and reads the CRC from its last 4
// octets. A live capture cuts FPDUs wherever the stack's writes and reads
// did, so the tshark comparisons rewrite it (oneFPDUPerSegment;
// docs/decode.md, "Wireshark 4.0 and markers").

// wsMarkers is how many markers Wireshark 4.0 counts in a segment of size
// octets that starts off octets after the direction's first FPDU
// (number_of_markers with get_first_marker_offset): one too many when the
// segment ends exactly on a marker position and has a marker inside.
func wsMarkers(off, size uint64) uint64 {
	first := (fpdu.MarkerInterval - off%fpdu.MarkerInterval) % fpdu.MarkerInterval
	if first >= size {
		return 0
	}
	return (size-first)/fpdu.MarkerInterval + 1
}

// markersIn is how many markers there are in those octets (RFC 5044 §4.3:
// one at every 512th octet of the stream).
func markersIn(off, size uint64) uint64 {
	first := (fpdu.MarkerInterval - off%fpdu.MarkerInterval) % fpdu.MarkerInterval
	if first >= size {
		return 0
	}
	return (size-first-1)/fpdu.MarkerInterval + 1
}

// segWriter synthesizes TCP connections into a pcap file like
// capture.Flow, but sends each payload at the stream offset it is given,
// so that a connection may leave holes in its sequence space.
type segWriter struct {
	w      *capture.PcapWriter
	now    time.Time
	frames int // frames written so far: the last one's number
	ipID   uint16
	buf    []byte
}

// segConn is one connection of a segWriter; side 0 is the client.
type segConn struct {
	sw   *segWriter
	ends [2]netip.AddrPort
	isn  [2]uint32
	next [2]uint32 // stream offset after the highest octet sent, by side
}

func (sw *segWriter) write(t *testing.T, f capture.TCPFrame) int {
	t.Helper()
	sw.ipID++
	f.IPID = sw.ipID
	sw.buf = capture.AppendTCPFrame(sw.buf[:0], &f)
	if err := sw.w.WritePacket(sw.now, sw.buf); err != nil {
		t.Fatal(err)
	}
	sw.now = sw.now.Add(time.Millisecond)
	sw.frames++
	return sw.frames
}

// open writes a three-way handshake (the initial sequence numbers of
// capture.Flow).
func (sw *segWriter) open(t *testing.T, client, server netip.AddrPort) *segConn {
	t.Helper()
	c := &segConn{sw: sw, ends: [2]netip.AddrPort{client, server}, isn: [2]uint32{0x10000000, 0xF0000000}}
	sw.write(t, capture.TCPFrame{Src: client, Dst: server, Seq: c.isn[0], Flags: capture.TCPSyn})
	sw.write(t, capture.TCPFrame{Src: server, Dst: client, Seq: c.isn[1], Ack: c.isn[0] + 1, Flags: capture.TCPSyn | capture.TCPAck})
	sw.write(t, capture.TCPFrame{Src: client, Dst: server, Seq: c.isn[0] + 1, Ack: c.isn[1] + 1, Flags: capture.TCPAck})
	return c
}

// seq returns side's sequence number of stream offset off.
func (c *segConn) seq(side int, off uint32) uint32 { return c.isn[side] + 1 + off }

// send writes data from side at stream offset off in one segment, which
// the peer acknowledges; it returns the segment's frame number.
func (c *segConn) send(t *testing.T, side int, off uint64, data []byte) int {
	t.Helper()
	o := uint32(off)
	frame := c.sw.write(t, capture.TCPFrame{Src: c.ends[side], Dst: c.ends[1-side], Seq: c.seq(side, o),
		Ack: c.seq(1-side, c.next[1-side]), Flags: capture.TCPAck | capture.TCPPsh, Payload: data})
	c.next[side] = max(c.next[side], o+uint32(len(data)))
	c.sw.write(t, capture.TCPFrame{Src: c.ends[1-side], Dst: c.ends[side], Seq: c.seq(1-side, c.next[1-side]),
		Ack: c.seq(side, c.next[side]), Flags: capture.TCPAck})
	return frame
}

// close writes the FIN exchange.
func (c *segConn) close(t *testing.T) {
	t.Helper()
	a, b := c.seq(0, c.next[0]), c.seq(1, c.next[1])
	c.sw.write(t, capture.TCPFrame{Src: c.ends[0], Dst: c.ends[1], Seq: a, Ack: b, Flags: capture.TCPFin | capture.TCPAck})
	c.sw.write(t, capture.TCPFrame{Src: c.ends[1], Dst: c.ends[0], Seq: b, Ack: a + 1, Flags: capture.TCPFin | capture.TCPAck})
	c.sw.write(t, capture.TCPFrame{Src: c.ends[0], Dst: c.ends[1], Seq: a + 1, Ack: b + 1, Flags: capture.TCPAck})
}

// wsRewrite is a capture rewritten for Wireshark by oneFPDUPerSegment.
type wsRewrite struct {
	File string
	// FPDUs holds the frames that carry one of the capture's FPDUs each;
	// Anchors the frames that repeat a direction's first FPDU in a
	// connection of its own (see Moved).
	FPDUs, Anchors map[int]bool
	// Moved is how many FPDUs were checked in a connection of their own.
	Moved int
}

// oneFPDUPerSegment rewrites a capture for Wireshark 4.0: every MPA frame
// and FPDU, as our decoder finds them, in a TCP segment of its own at its
// sequence number, except where Wireshark would miscount the markers of
// an FPDU (wsMarkers differs from markersIn: the FPDU ends exactly on a
// marker position and has markers inside). That FPDU is left out, a hole
// in the sequence space that keeps Wireshark on the FPDUs after it, and
// is sent again in a connection of its own: the connection's MPA Request
// and Reply, its direction's first FPDU (which sets where Wireshark counts
// markers from, get_state_of_first_fpdu), and after a hole the FPDU, at a
// sequence number that puts Wireshark's marker grid one octet later than
// the FPDU's markers. Wireshark then counts the right number of markers,
// reads the CRC from the FPDU's last 4 octets and computes it over all the
// octets before them (markers included), so its verdict on the CRC is
// sound; only where it strips the markers before DDP is one octet off. No
// FPDU octet is changed. An FPDU that also starts on a marker position
// (its first octet is a marker) cannot be checked at all: Wireshark reads
// ULPDU_Length after a marker only where its grid has one, and its count
// is then one too many; the test fails on it.
func oneFPDUPerSegment(t *testing.T, file string) *wsRewrite {
	t.Helper()
	a, err := capture.ReadFile(file, capture.Limits{})
	if err != nil || len(a.Conns()) == 0 {
		t.Fatalf("%v, %d connections", err, len(a.Conns()))
	}
	var buf bytes.Buffer
	w, err := capture.NewPcapWriter(&buf, capture.LinkEthernet)
	if err != nil {
		t.Fatal(err)
	}
	sw := &segWriter{w: w, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	rw := &wsRewrite{FPDUs: map[int]bool{}, Anchors: map[int]bool{}}
	server := netip.MustParseAddrPort("192.0.2.2:7001")
	port := uint16(40002)
	newConn := func() *segConn {
		port++
		return sw.open(t, netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), port-1), server)
	}
	type moved struct {
		side   int
		mpa    [2][]byte // the Request and the Reply
		base   uint64    // where the FPDUs of side start
		anchor []byte    // the first FPDU of side
		off    uint64    // where the FPDU starts, counted from base
		data   []byte
		conn   int
	}
	var later []moved
	for i, c := range a.Conns() {
		dc := decode.DecodeConn(c, decode.Options{})
		if dc.Initiator < 0 {
			t.Fatalf("connection %d: no MPA startup in the capture", i+1)
		}
		sc := newConn()
		var mpaFrames [2][]byte
		var base [2]uint64
		var first [2][]byte
		for _, it := range dc.Items {
			if it.Kind != decode.KindMPA && it.Kind != decode.KindFPDU {
				continue
			}
			runs := dc.C.Dir[it.Dir].Runs()
			if len(runs) != 1 || runs[0].Off != 0 || it.Off+it.Size > uint64(len(runs[0].Data)) {
				t.Fatalf("connection %d: direction %d is not one whole run", i+1, it.Dir)
			}
			data := runs[0].Data[it.Off : it.Off+it.Size]
			side := 1
			if it.Dir == dc.Initiator {
				side = 0
			}
			if it.Kind == decode.KindMPA {
				mpaFrames[side], base[side] = data, it.Off+it.Size
				sc.send(t, side, it.Off, data)
				continue
			}
			if first[side] == nil {
				first[side] = data
			}
			if off := it.Off - base[side]; dc.Markers[it.Dir] && wsMarkers(off, it.Size) != markersIn(off, it.Size) {
				later = append(later, moved{side: side, mpa: mpaFrames, base: base[side], anchor: first[side],
					off: off, data: data, conn: i + 1})
				continue
			}
			rw.FPDUs[sc.send(t, side, it.Off, data)] = true
		}
		sc.close(t)
	}
	for _, m := range later {
		first := (fpdu.MarkerInterval - m.off%fpdu.MarkerInterval) % fpdu.MarkerInterval
		if first == 0 {
			t.Errorf("connection %d: the FPDU at %d (%d octets, starting and ending on a marker position) cannot be framed by Wireshark 4.0",
				m.conn, m.off, len(m.data))
			continue
		}
		sc := newConn()
		sc.send(t, 0, 0, m.mpa[0])
		sc.send(t, 1, 0, m.mpa[1])
		rw.Anchors[sc.send(t, m.side, m.base, m.anchor)] = true
		// Wireshark's first marker one octet past the FPDU's.
		at := uint64(fpdu.MarkerInterval) - (first + 1)
		for at < uint64(len(m.anchor)) {
			at += fpdu.MarkerInterval
		}
		rw.FPDUs[sc.send(t, m.side, m.base+at, m.data)] = true
		sc.close(t)
		rw.Moved++
	}
	rw.File = filepath.Join(t.TempDir(), "one-fpdu-per-segment.pcap")
	if err := os.WriteFile(rw.File, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return rw
}

// markerCaptureFPDUs decodes a capture of markerCapture with our decoder
// and checks it: every FPDU whole, with a good CRC and good FPDUPTRs, in
// both directions markers; it returns the number of FPDUs and of those
// whose CRC field follows a marker, per direction.
func markerCaptureFPDUs(t *testing.T, file string) (fpdus, beforeCRC [2]int) {
	t.Helper()
	a, err := capture.ReadFile(file, capture.Limits{})
	if err != nil || len(a.Conns()) != 1 {
		t.Fatalf("%v, %d connections", err, len(a.Conns()))
	}
	dc := decode.DecodeConn(a.Conns()[0], decode.Options{})
	if !dc.Markers[0] || !dc.Markers[1] || dc.CRC != decode.CRCOn {
		t.Fatalf("decoded markers %v, CRC %v", dc.Markers, dc.CRC)
	}
	var base [2]uint64 // where each direction's FPDUs, and markers, start
	for _, it := range dc.Items {
		switch {
		case it.Kind == decode.KindMPA:
			base[it.Dir] = it.Off + it.Size
		case it.Kind == decode.KindFPDU:
			f := &it.FPDU
			if it.FPDUErr != nil || it.ULPDUErr != nil || !it.CRCGood() || f.BadMarkers != 0 {
				t.Errorf("FPDU at %d in direction %d: %v / %v, CRC good %v, %d bad markers", it.Off, it.Dir, it.FPDUErr, it.ULPDUErr, it.CRCGood(), f.BadMarkers)
			}
			fpdus[it.Dir]++
			if (it.Off+it.Size-fpdu.CRCLen-fpdu.MarkerLen-base[it.Dir])%fpdu.MarkerInterval == 0 {
				beforeCRC[it.Dir]++
			}
		}
	}
	for d := range 2 {
		if beforeCRC[d] == 0 {
			t.Errorf("direction %d: none of %d FPDUs has a marker before its CRC field", d, fpdus[d])
		}
	}
	return fpdus, beforeCRC
}

// TestMarkerCaptureDecodes checks, without tshark, what
// TestDecodeMatchesTsharkWithMarkers compares with Wireshark: the live
// capture and its rewrite with one FPDU per segment decode alike.
func TestMarkerCaptureDecodes(t *testing.T) {
	live := markerCapture(t)
	fpdus, beforeCRC := markerCaptureFPDUs(t, live)
	rw := oneFPDUPerSegment(t, live)
	if rw.Moved != 0 { // steer keeps every FPDU where Wireshark can frame it
		t.Fatalf("%d FPDUs moved to connections of their own", rw.Moved)
	}
	f2, b2 := markerCaptureFPDUs(t, rw.File)
	if f2 != fpdus || b2 != beforeCRC {
		t.Errorf("rewritten with one FPDU per segment: %v FPDUs, %v before the CRC; live %v, %v", f2, b2, fpdus, beforeCRC)
	}
	t.Logf("FPDUs per direction %v, with a marker before the CRC field %v", fpdus, beforeCRC)
}

// TestDecodeMatchesTsharkWithMarkers: on a live connection with markers
// in both directions and CRC (rewritten with one FPDU per segment, as
// Wireshark needs), tshark finds the FPDUs we find, with the same fields,
// and calls every CRC good, those whose CRC field follows a marker (which
// the CRC covers) included.
func TestDecodeMatchesTsharkWithMarkers(t *testing.T) {
	tshark := needTshark(t)
	file := oneFPDUPerSegment(t, markerCapture(t)).File
	fpdus, beforeCRC := markerCaptureFPDUs(t, file)
	n := compareWithTshark(t, tshark, file)
	good := 0
	for frame, vs := range tsharkCRCVerdicts(t, tshark, file) {
		for _, v := range vs {
			if v != "good" {
				t.Errorf("frame %d: tshark says the CRC is %s", frame, v)
			}
			good++
		}
	}
	if total := fpdus[0] + fpdus[1]; n != total || good != total {
		t.Errorf("%d FPDUs decoded, %d compared with tshark, %d good CRCs in tshark", total, n, good)
	}
	if !t.Failed() {
		t.Logf("%d FPDUs, %v with a marker before the CRC field, all CRCs good in tshark", n, beforeCRC)
	}
}
