package mpa

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// siwLikeConfig configures our Responder like the siw rping server of
// siw_mpa_reply.hex: no CRC unless asked, markers refused, IRD/ORD up to
// siw's 128 (so a Request's values are echoed), P2P with Write or Read RTR,
// no extension bits, no private data.
func siwLikeConfig() *Config {
	return &Config{IRD: 128, ORD: 128, AcceptRTR: RTRWrite | RTRRead, RefuseMarkers: true, NoAdvertise: true}
}

// siwP2PRTR is the RTR siw's P2P build sends (siw_mpa_request.hex): a
// zero-length RDMA Write to STag 1, TO 0, without CRC.
const siwP2PRTR = "000e c140 00000001 0000000000000000 00000000"

// answer runs our Responder with cfg on probe p's Request, sent by a raw
// client, and returns the bytes of the Reply. After a P2P Reply the client
// sends siw's RTR.
func answer(t *testing.T, p probe, cfg *Config) (reply []byte, acceptErr error) {
	cc, sc := tcpPair(t)
	ctx := testCtx(t)
	done := make(chan error, 1)
	go func() {
		req, err := ReadRequest(ctx, sc, nil)
		if err != nil {
			done <- err
			return
		}
		c, err := req.Accept(ctx, cfg)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	if _, err := cc.Write(p.req); err != nil {
		t.Fatal(err)
	}
	_ = cc.SetReadDeadline(time.Now().Add(10 * time.Second))
	reply = make([]byte, HeaderLen)
	if _, err := io.ReadFull(cc, reply); err != nil {
		t.Fatalf("%s: no Reply: %v", p.name, err)
	}
	pdLen, err := parseHeader(reply, 0)
	if err != nil {
		t.Fatalf("%s: Reply header: %v", p.name, err)
	}
	reply = append(reply, make([]byte, pdLen)...)
	if _, err := io.ReadFull(cc, reply[HeaderLen:]); err != nil {
		t.Fatal(err)
	}
	if f, _, _ := ParseFrame(reply, 0); f.Flags&FlagReject == 0 {
		if b, ok := f.IRDORD(); ok && b.P2P && f.Flags&FlagCRC == 0 {
			if _, err := cc.Write(hexBytes(t, siwP2PRTR)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cc.Close() // after the RTR, if any: the Responder reads it before the end
	acceptErr = <-done
	return reply, acceptErr
}

// TestSiwRepliesByteIdentical: configured like siw, our Responder answers
// every Request of siw_mpa_reply.hex with siw's exact bytes.
func TestSiwRepliesByteIdentical(t *testing.T) {
	for _, p := range siwProbes(t) {
		got, err := answer(t, p, siwLikeConfig())
		if !bytes.Equal(got, p.rep) {
			t.Errorf("%s: our Reply %x\n              siw's %x", p.name, got, p.rep)
		}
		wantErr := p.name == "markers_rejected"
		if (err != nil) != wantErr {
			t.Errorf("%s: Accept = %v", p.name, err)
		}
	}
}

// siwDifference is how our default Responder's Reply differs from siw's.
type siwDifference struct {
	probe string
	ours  string // hex of our Reply
	why   string
}

// siwDifferences lists, for every probe, our Reply under DefaultConfig and
// why it differs from siw's (or "identical").
var siwDifferences = []siwDifference{
	{"v1_nocrc", "4d504120494420526570204672616d6540010000", "we ask for CRC by default (C); siw only answers C when asked"},
	{"v1_crc", "4d504120494420526570204672616d6540010000", "identical"},
	{"v2_enh_nocrc", "4d504120494420526570204672616d655002000400100010", "C set (CRC asked by default); IRD/ORD identical because 16 is both the request and our default"},
	{"v2_enh_p2p_wrtr", "4d504120494420526570204672616d655002000480108010", "C set; P2P and Write RTR chosen as siw does"},
	{"v2_enh_crc_pd", "4d504120494420526570204672616d655002000400080008", "identical: CRC was asked, IRD/ORD 8/8 are below our 16/16, and neither sends private data back"},
	{"markers_rejected", "4d504120494420526570204672616d6540010000", "we support markers and accept M (siw rejects with R); C set by default"},
}

// TestSiwRepliesDefaultConfig: our default Responder's Reply to each siw
// probe is the one documented in siwDifferences.
func TestSiwRepliesDefaultConfig(t *testing.T) {
	probes := siwProbes(t)
	if len(probes) != len(siwDifferences) {
		t.Fatalf("%d probes, %d documented differences", len(probes), len(siwDifferences))
	}
	for i, p := range probes {
		d := siwDifferences[i]
		if d.probe != p.name {
			t.Fatalf("difference %d is for %s, probe is %s", i, d.probe, p.name)
		}
		got, _ := answer(t, p, nil)
		if hex.EncodeToString(got) != d.ours {
			t.Errorf("%s: our Reply %x, documented %s", p.name, got, d.ours)
		}
		if (bytes.Equal(got, p.rep)) != (strings.HasPrefix(d.why, "identical")) {
			t.Errorf("%s: identical=%v but documented %q", p.name, bytes.Equal(got, p.rep), d.why)
		}
	}
}

// siwTable renders the differences for docs/mpa.md.
func siwTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| probe | Request | siw's Reply | our Reply (`DefaultConfig`) | why |\n|---|---|---|---|---|\n")
	for i, p := range siwProbes(t) {
		d := siwDifferences[i]
		req, _, _ := ParseFrame(p.req, 0)
		siw, _, _ := ParseFrame(p.rep, 0)
		ours, _, _ := ParseFrame(hexBytes(t, d.ours), 0)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", p.name, cell(fmtFrame(req)), cell(fmtFrame(siw)), cell(fmtFrame(ours)), d.why)
	}
	return b.String()
}
