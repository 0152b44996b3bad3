package mpa

import (
	"errors"
	"testing"
)

type initiatorRow struct {
	// Initiator configuration: what differs from DefaultConfig.
	config string
	mod    func(*Config)
	// The Reply.
	flags     Flags
	rev       uint8
	blk       *IRDORD
	ulp       string
	notReply  bool // a Request key where the Reply belongs
	wantOut   string
	wantParam string
}

const dflt = "default"

var initiatorRows = []initiatorRow{
	{config: dflt, flags: FlagCRC | FlagEnhanced | 3, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Write, ext RFC7306+V2"},
	{config: dflt, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRRead, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Read"},
	{config: dflt, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRSend, 16, 16), wantOut: "terminate LLP 0x07 (no matching RTR model)"},
	{config: "OfferRTR Send", mod: func(c *Config) { c.OfferRTR = RTRSend }, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Write"},
	{config: dflt, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite|RTRRead, 16, 16), wantOut: "terminate LLP 0x07 (no matching RTR model)"},
	{config: dflt, flags: FlagEnhanced, rev: 2, blk: blk(true, 0, 16, 16), wantOut: "terminate LLP 0x07 (no matching RTR model)"},
	{config: dflt, flags: FlagEnhanced, rev: 2, blk: blk(false, 0, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16"},
	{config: "RequireP2P", mod: func(c *Config) { c.RequireP2P = true }, flags: FlagEnhanced, rev: 2, blk: blk(false, 0, 16, 16), wantOut: "terminate LLP 0x07 (no matching RTR model)"},
	{config: dflt, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 17), wantOut: "terminate LLP 0x06 (insufficient IRD resources)"},
	{config: dflt, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, IRDORDMax, IRDORDMax), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Write"},
	{config: dflt, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 4, 2), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/4, RTR Write"},
	{config: dflt, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRRead, 0, 16), wantOut: "terminate LLP 0x06 (insufficient IRD resources)"},
	{config: "IRD/ORD 0/0 (perftest)", mod: func(c *Config) { c.IRD, c.ORD = 0, 0 }, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRRead, 1, 0), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 0/0 +RTR credit, RTR Read"},
	{config: "IRD/ORD 0/0 (perftest)", mod: func(c *Config) { c.IRD, c.ORD = 0, 0 }, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 1, 0), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 0/0, RTR Write"},
	{config: dflt, flags: FlagCRC, rev: 1, wantOut: "accept", wantParam: "Rev1 CRC, IRD/ORD 16/16 (config)"},
	{config: dflt, flags: 0, rev: 2, wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16 (config)"},
	{config: "RequireP2P", mod: func(c *Config) { c.RequireP2P = true }, flags: 0, rev: 1, wantOut: "terminate LLP 0x07 (no matching RTR model)"},
	{config: "Rev 1, no P2P", mod: func(c *Config) { c.Rev, c.P2P = 1, false }, flags: FlagEnhanced, rev: 2, blk: blk(false, 0, 16, 16), wantOut: "terminate LLP 0x04 (MPA Reply does not match the Request)"},
	{config: "no P2P", mod: func(c *Config) { c.P2P = false }, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "terminate LLP 0x04 (MPA Reply does not match the Request)"},
	{config: "no P2P", mod: func(c *Config) { c.P2P = false }, flags: FlagEnhanced, rev: 2, blk: blk(false, 0, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16"},
	{config: "NoAdvertise", mod: func(c *Config) { c.NoAdvertise = true }, flags: FlagEnhanced | 2, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "terminate LLP 0x04 (MPA Reply claims an extension that was not offered)"},
	{config: "Extensions RFC7306", mod: func(c *Config) { c.Extensions = ExtRFC7306 }, flags: FlagEnhanced | 3, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "terminate LLP 0x04 (MPA Reply claims an extension that was not offered)"},
	{config: dflt, flags: FlagEnhanced | 2, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Write, ext RFC7306"},
	{config: dflt, flags: FlagEnhanced | 1, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Write"},
	{config: dflt, flags: FlagEnhanced | 0x0C, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Write, echoed"},
	{config: dflt + " (Linux siw echoes the Request's flags)", flags: FlagCRC | FlagEnhanced | FlagEchoProbe | 3, rev: 2, blk: blk(true, RTRWrite, 1, 1), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/1, RTR Write, echoed"},
	{config: "NoEchoProbe", mod: func(c *Config) { c.NoEchoProbe = true }, flags: FlagCRC | FlagEnhanced | 3, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Write, ext RFC7306+V2"},
	{config: "NoAdvertise, peer declared RFC7306", mod: func(c *Config) { c.NoAdvertise, c.DeclarePeerExtensions, c.PeerExtensions = true, true, ExtRFC7306 }, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Write, ext RFC7306"},
	{config: dflt, flags: FlagReject | FlagEnhanced, rev: 2, blk: blk(false, 0, 0, 0), ulp: "busy", wantOut: `rejected by peer, pd "busy"`},
	{config: dflt, flags: FlagReject, rev: 1, ulp: "no", wantOut: `rejected by peer, pd "no"`},
	{config: dflt, flags: FlagReject, rev: 1, wantOut: `rejected by peer, pd ""`},
	{config: dflt, notReply: true, flags: 0, rev: 1, wantOut: "close (bad MPA frame key)"},
	{config: dflt, flags: FlagMarkers | FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, markers→R, IRD/ORD 16/16, RTR Write"},
	{config: "Markers", mod: func(c *Config) { c.Markers = true }, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, markers→I, IRD/ORD 16/16, RTR Write"},
	{config: "no CRC", mod: func(c *Config) { c.CRC = false }, flags: FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2, IRD/ORD 16/16, RTR Write"},
	{config: "no CRC", mod: func(c *Config) { c.CRC = false }, flags: FlagCRC | FlagEnhanced, rev: 2, blk: blk(true, RTRWrite, 16, 16), wantOut: "accept", wantParam: "Rev2 CRC, IRD/ORD 16/16, RTR Write"},
}

// initiatorRequest returns the row's Initiator configuration and Request.
func initiatorRequest(t testing.TB, r initiatorRow) (*Config, Frame) {
	cfg := DefaultConfig()
	if r.mod != nil {
		r.mod(cfg)
	}
	if err := cfg.check(true); err != nil {
		t.Fatalf("%s: %v", r.config, err)
	}
	hdr, b := RequestFrame(cfg)
	return cfg, mkFrame(t, false, hdr.Flags, hdr.Rev, &b, "")
}

func TestDecideInitiatorTable(t *testing.T) {
	for i, r := range initiatorRows {
		cfg, req := initiatorRequest(t, r)
		rep := mkFrame(t, !r.notReply, r.flags, r.rev, r.blk, r.ulp)
		d := DecideInitiator(&req, &rep, cfg)
		out := fmtOutcome(d.Action, d.Err)
		param := ""
		if d.Action == ActionAccept {
			param = fmtParams(d.Params)
			if !d.Params.Initiator {
				t.Errorf("row %d: Initiator params without the Initiator role", i+1)
			}
		}
		if out != r.wantOut || param != r.wantParam {
			t.Errorf("row %d (%s | %s | %s):\n got  %s | %s\n want %s | %s", i+1, r.config, fmtFrame(req), fmtFrame(rep), out, param, r.wantOut, r.wantParam)
		}
		if d.Action == ActionTerminate {
			// The Terminate goes out framed as negotiated.
			if d.Params.CRC != (req.Flags&FlagCRC != 0 || rep.Flags&FlagCRC != 0) {
				t.Errorf("row %d: Terminate framing lost the CRC setting", i+1)
			}
		}
	}
}

func TestRequestFrame(t *testing.T) {
	cfg := DefaultConfig()
	hdr, b := RequestFrame(cfg)
	if got := fmtFrame(mkFrame(t, false, hdr.Flags, hdr.Rev, &b, "")); got != "Rev2 C H ext=0x3 res=0x8 [P2P Write|Read 16/16]" {
		t.Errorf("default Request: %s", got)
	}
	// Without the echo probe the Request is exactly the v2.tsv vector's
	// mpa-request-rev2-ext (with IRD/ORD 16/16, no P2P).
	cfg.NoEchoProbe, cfg.P2P = true, false
	if got := fmtFrame(mkFrame(t, false, hdr2(cfg).Flags, 2, &IRDORD{IRD: 16, ORD: 16}, "")); got != "Rev2 C H ext=0x3 [16/16]" {
		t.Errorf("Request without the probe: %s", got)
	}
	cfg.NoEchoProbe, cfg.P2P = false, true
	cfg.ORD = 0
	if _, b := RequestFrame(cfg); b.ORD != 1 {
		t.Errorf("Read RTR offered with ORD 0: wire ORD %d, want 1", b.ORD)
	}
	cfg.OfferRTR = RTRWrite
	if _, b := RequestFrame(cfg); b.ORD != 0 {
		t.Errorf("Write RTR only with ORD 0: wire ORD %d, want 0", b.ORD)
	}
	v1 := &Config{Rev: 1, Markers: true}
	if hdr, _ := RequestFrame(v1); hdr.Enhanced() || hdr.Flags != FlagMarkers {
		t.Errorf("Rev 1 Request: %#x", hdr.Flags)
	}
}

func TestConfigCheck(t *testing.T) {
	bad := []*Config{
		nil,
		{Rev: 3},
		{Rev: 1, P2P: true, OfferRTR: RTRWrite},
		{P2P: true},
		{IRD: 0x4000},
		{OfferRTR: 0x80},
		{PrivateData: make([]byte, 509)},
		{Rev: 1, PrivateData: make([]byte, 513)},
	}
	for i, c := range bad {
		if err := c.check(true); err == nil {
			t.Errorf("bad[%d] passed", i)
		}
	}
	if err := (&Config{Rev: 1, PrivateData: make([]byte, 512)}).check(true); err != nil {
		t.Error(err)
	}
	if err := (&Config{PrivateData: make([]byte, 513)}).check(false); err == nil {
		t.Error("Responder PD 513 passed")
	}
	if err := DefaultConfig().check(true); err != nil {
		t.Error(err)
	}
}

func TestParamsMSN(t *testing.T) {
	cases := []struct {
		p                  Params
		send0, send1, rcv0 uint32
		rcv1               uint32
	}{
		{Params{Initiator: true, P2P: true, RTR: RTRSend}, 2, 1, 1, 1},
		{Params{Initiator: true, P2P: true, RTR: RTRRead}, 1, 2, 1, 1},
		{Params{Initiator: true, P2P: true, RTR: RTRWrite}, 1, 1, 1, 1},
		{Params{P2P: true, RTR: RTRSend}, 1, 1, 2, 1},
		{Params{P2P: true, RTR: RTRRead}, 1, 1, 1, 2},
		{Params{RTR: RTRRead}, 1, 1, 1, 1},
	}
	for i, c := range cases {
		if c.p.SendMSN(0) != c.send0 || c.p.SendMSN(1) != c.send1 || c.p.RecvMSN(0) != c.rcv0 || c.p.RecvMSN(1) != c.rcv1 {
			t.Errorf("case %d: %d %d %d %d", i, c.p.SendMSN(0), c.p.SendMSN(1), c.p.RecvMSN(0), c.p.RecvMSN(1))
		}
	}
}

func TestRejectError(t *testing.T) {
	req := mkFrame(t, false, FlagEnhanced, 2, blk(false, 0, 1, 1), "")
	rep := mkFrame(t, true, FlagReject|FlagEnhanced, 2, blk(false, 0, 0, 0), "why")
	d := DecideInitiator(&req, &rep, DefaultConfig())
	var re *RejectError
	if !errors.As(d.Err, &re) || string(re.PrivateData) != "why" || re.Rev != 2 {
		t.Fatalf("%v", d.Err)
	}
	if re.Error() == "" {
		t.Error("empty message")
	}
}

func hdr2(cfg *Config) Frame {
	h, _ := RequestFrame(cfg)
	return h
}
