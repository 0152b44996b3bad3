package mpa

import (
	"testing"
)

// The truth tables of docs/mpa.md: each row is asserted here, and
// TestTruthTablesInDoc checks that the doc shows exactly these rows.

// blk builds an IRD/ORD block for the tables.
func blk(p2p bool, rtr RTR, ird, ord uint16) *IRDORD {
	return &IRDORD{P2P: p2p, RTR: rtr, IRD: ird, ORD: ord}
}

// mkFrame encodes and parses a frame, as a peer's bytes would arrive.
func mkFrame(t testing.TB, reply bool, flags Flags, rev uint8, b *IRDORD, ulp string) Frame {
	t.Helper()
	hdr := Frame{Reply: reply, Flags: flags, Rev: rev}
	var v IRDORD
	if b != nil {
		v = *b
	}
	f, _, err := ParseFrame(appendFrameBlock(nil, hdr, &v, []byte(ulp)), 0)
	if err != nil {
		t.Fatalf("test frame: %v", err)
	}
	return f
}

// responderBase is the Responder configuration the table rows modify: no
// CRC or markers asked, IRD/ORD 16/16, every RTR type and both extensions.
func responderBase() *Config {
	return &Config{IRD: 16, ORD: 16, AcceptRTR: RTRAll, Extensions: ExtAll}
}

type responderRow struct {
	// Request.
	flags Flags
	rev   uint8
	blk   *IRDORD
	ulp   string
	reply bool // a Reply key where the Request belongs
	// Responder configuration: what differs from responderBase.
	config string
	mod    func(*Config)
	// Expected.
	wantReply, wantOutcome, wantParams string
}

var responderRows = []responderRow{
	{flags: 0, rev: 1, config: "base", wantReply: "Rep Rev1", wantOutcome: "accept", wantParams: "Rev1, IRD/ORD 16/16 (config)"},
	{flags: FlagCRC, rev: 1, config: "base", wantReply: "Rep Rev1 C", wantOutcome: "accept", wantParams: "Rev1 CRC, IRD/ORD 16/16 (config)"},
	{flags: 0, rev: 1, config: "CRC", mod: func(c *Config) { c.CRC = true }, wantReply: "Rep Rev1 C", wantOutcome: "accept", wantParams: "Rev1 CRC, IRD/ORD 16/16 (config)"},
	{flags: FlagMarkers, rev: 1, config: "base", wantReply: "Rep Rev1", wantOutcome: "accept", wantParams: "Rev1, markers→I, IRD/ORD 16/16 (config)"},
	{flags: FlagMarkers, rev: 1, config: "RefuseMarkers (siw)", mod: func(c *Config) { c.RefuseMarkers = true }, wantReply: "Rep Rev1 R", wantOutcome: "reject (markers requested but refused)"},
	{flags: FlagCRC, rev: 1, config: "Markers", mod: func(c *Config) { c.Markers = true }, wantReply: "Rep Rev1 M C", wantOutcome: "accept", wantParams: "Rev1 CRC, markers→R, IRD/ORD 16/16 (config)"},
	{flags: FlagMarkers, rev: 1, config: "Markers", mod: func(c *Config) { c.Markers = true }, wantReply: "Rep Rev1 M", wantOutcome: "accept", wantParams: "Rev1, markers→I, markers→R, IRD/ORD 16/16 (config)"},
	{flags: FlagEnhanced, rev: 1, config: "base", wantReply: "Rep Rev1", wantOutcome: "accept", wantParams: "Rev1, IRD/ORD 16/16 (config)"},
	{flags: FlagEnhanced, rev: 2, blk: blk(false, 0, 16, 16), config: "base", wantReply: "Rep Rev2 H [16/16]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 16/16"},
	{flags: FlagEnhanced, rev: 2, blk: blk(false, 0, 1, 1), config: "base", wantReply: "Rep Rev2 H [1/1]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 1/1"},
	{flags: FlagEnhanced, rev: 2, blk: blk(false, 0, 128, 4), config: "base", wantReply: "Rep Rev2 H [4/16]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 4/16"},
	{flags: FlagEnhanced, rev: 2, blk: blk(false, 0, IRDORDMax, IRDORDMax), config: "base", wantReply: "Rep Rev2 H [16/16]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 16/16"},
	{flags: FlagEnhanced, rev: 2, blk: blk(false, 0, 0, 0), config: "base", wantReply: "Rep Rev2 H [0/0]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 0/0"},
	{flags: FlagCRC | FlagEnhanced, rev: 2, blk: blk(false, 0, 8, 8), ulp: "hello-pd", config: "base", wantReply: "Rep Rev2 C H [8/8]", wantOutcome: "accept", wantParams: "Rev2 CRC, IRD/ORD 8/8"},
	{flags: 0, rev: 2, ulp: "abc", config: "base", wantReply: "Rep Rev2", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 16/16 (config)"},
	{flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite|RTRRead, 16, 16), config: "base", wantReply: "Rep Rev2 H [P2P Write 16/16]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 16/16, RTR Write"},
	{flags: FlagEnhanced, rev: 2, blk: blk(true, RTRRead|RTRSend, 16, 16), config: "base", wantReply: "Rep Rev2 H [P2P Read 16/16]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 16/16, RTR Read"},
	{flags: FlagEnhanced, rev: 2, blk: blk(true, RTRSend, 16, 16), config: "base", wantReply: "Rep Rev2 H [P2P Send 16/16]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 16/16, RTR Send"},
	{flags: FlagEnhanced, rev: 2, blk: blk(true, RTRRead, 0, 0), config: "base", wantReply: "Rep Rev2 H [P2P Read 1/0]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 0/0 +RTR credit, RTR Read"},
	{flags: FlagEnhanced, rev: 2, blk: blk(true, RTRSend, 16, 16), config: "AcceptRTR Write|Read", mod: func(c *Config) { c.AcceptRTR = RTRWrite | RTRRead }, wantReply: "Rep Rev2 R H [0/0]", wantOutcome: "reject (no matching RTR model)"},
	{flags: FlagEnhanced, rev: 2, blk: blk(true, 0, 16, 16), config: "base", wantReply: "Rep Rev2 R H [0/0]", wantOutcome: "reject (no matching RTR model)"},
	{flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 16), config: "AcceptRTR none (no P2P)", mod: func(c *Config) { c.AcceptRTR = 0 }, wantReply: "Rep Rev2 H [16/16]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 16/16"},
	{flags: FlagMarkers | FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 16), config: "RefuseMarkers (siw)", mod: func(c *Config) { c.RefuseMarkers = true }, wantReply: "Rep Rev2 R H [0/0]", wantOutcome: "reject (markers requested but refused)"},
	{flags: FlagEnhanced | 0x03, rev: 2, blk: blk(false, 0, 16, 16), config: "base", wantReply: "Rep Rev2 H ext=0x3 [16/16]", wantOutcome: "accept", wantParams: "Rev2, IRD/ORD 16/16, ext RFC7306+V2"},
	{flags: 0x02, rev: 1, config: "base", wantReply: "Rep Rev1 ext=0x2", wantOutcome: "accept", wantParams: "Rev1, IRD/ORD 16/16 (config), ext RFC7306"},
	{flags: 0x03, rev: 1, config: "Extensions RFC7306", mod: func(c *Config) { c.Extensions = ExtRFC7306 }, wantReply: "Rep Rev1 ext=0x2", wantOutcome: "accept", wantParams: "Rev1, IRD/ORD 16/16 (config), ext RFC7306"},
	{flags: 0x01, rev: 1, config: "base", wantReply: "Rep Rev1", wantOutcome: "accept", wantParams: "Rev1, IRD/ORD 16/16 (config)"},
	{flags: 0x03, rev: 1, config: "Extensions V2 alone (= none)", mod: func(c *Config) { c.Extensions = ExtV2 }, wantReply: "Rep Rev1", wantOutcome: "accept", wantParams: "Rev1, IRD/ORD 16/16 (config)"},
	{flags: 0x03, rev: 1, config: "NoAdvertise", mod: func(c *Config) { c.NoAdvertise = true }, wantReply: "Rep Rev1", wantOutcome: "accept", wantParams: "Rev1, IRD/ORD 16/16 (config)"},
	{flags: 0, rev: 1, config: "NoAdvertise, peer declared RFC7306+V2", mod: func(c *Config) { c.NoAdvertise, c.DeclarePeerExtensions, c.PeerExtensions = true, true, ExtAll }, wantReply: "Rep Rev1", wantOutcome: "accept", wantParams: "Rev1, IRD/ORD 16/16 (config), ext RFC7306+V2"},
	{flags: 0x0C | FlagReject, rev: 1, config: "base", wantReply: "Rep Rev1", wantOutcome: "accept", wantParams: "Rev1, IRD/ORD 16/16 (config)"},
	{flags: 0, rev: 1, reply: true, config: "base", wantReply: "—", wantOutcome: "close (bad MPA frame key)"},
}

func TestDecideResponderTable(t *testing.T) {
	for i, r := range responderRows {
		req := mkFrame(t, r.reply, r.flags, r.rev, r.blk, r.ulp)
		cfg := responderBase()
		if r.mod != nil {
			r.mod(cfg)
		}
		d := DecideResponder(&req, cfg)
		reply, params := responderCells(d)
		outcome := fmtOutcome(d.Action, d.Err)
		if reply != r.wantReply || outcome != r.wantOutcome || params != r.wantParams {
			t.Errorf("row %d (%s | %s):\n got  %s | %s | %s\n want %s | %s | %s", i+1, fmtFrame(req), r.config,
				reply, outcome, params, r.wantReply, r.wantOutcome, r.wantParams)
		}
		if d.Action == ActionAccept && d.Params.Initiator {
			t.Errorf("row %d: Responder params claim the Initiator role", i+1)
		}
	}
}

// responderCells renders a decision's Reply and Params cells.
func responderCells(d ResponderDecision) (reply, params string) {
	if d.Action == ActionClose {
		return "—", ""
	}
	reply = fmtFrame(mkFrameNoT(d.Reply, d.Block))
	if d.Action == ActionAccept {
		params = fmtParams(d.Params)
	}
	return reply, params
}

// mkFrameNoT encodes and re-parses a decision's Reply header and block.
func mkFrameNoT(hdr Frame, b IRDORD) Frame {
	f, _, err := ParseFrame(appendFrameBlock(nil, hdr, &b, nil), 0)
	if err != nil {
		panic(err)
	}
	return f
}
