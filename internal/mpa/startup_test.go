package mpa

import (
	"errors"
	"fmt"
	"testing"
)

// TestStartupMatrix negotiates every combination of Rev, CRC asked by
// either side, markers asked by either side and P2P with each RTR type
// between two endpoints of this package over loopback TCP, checks that
// both sides agree, and exchanges FPDUs of sizes 14, 15, MULPDU-1 and
// MULPDU in both directions through the fpdu.Conn.
func TestStartupMatrix(t *testing.T) {
	type p2pCase struct {
		name  string
		offer RTR // 0: no P2P
	}
	p2ps := []p2pCase{{"plain", 0}, {"write", RTRWrite}, {"read", RTRRead}, {"send", RTRSend}}
	for _, rev := range []uint8{1, 2} {
		for _, p := range p2ps {
			if rev == 1 && p.offer != 0 {
				continue
			}
			for mask := range 16 {
				iCRC, rCRC, iM, rM := mask&1 != 0, mask&2 != 0, mask&4 != 0, mask&8 != 0
				name := fmt.Sprintf("rev%d/%s/crcI=%v,crcR=%v/mI=%v,mR=%v", rev, p.name, iCRC, rCRC, iM, rM)
				t.Run(name, func(t *testing.T) {
					icfg := &Config{Rev: rev, CRC: iCRC, Markers: iM, IRD: 4, ORD: 8, P2P: p.offer != 0, OfferRTR: p.offer, RequireP2P: p.offer != 0}
					rcfg := &Config{CRC: rCRC, Markers: rM, IRD: 16, ORD: 2, AcceptRTR: RTRAll}
					ini, resp := startPair(t, icfg, rcfg)
					if ini.err != nil || resp.err != nil {
						t.Fatalf("initiator: %v; responder: %v", ini.err, resp.err)
					}
					defer ini.c.Close()
					defer resp.c.Close()
					ip, rp := ini.c.Params(), resp.c.Params()
					if ip.Rev != rev || rp.Rev != rev {
						t.Errorf("Rev %d/%d, want %d", ip.Rev, rp.Rev, rev)
					}
					if ip.CRC != (iCRC || rCRC) || rp.CRC != ip.CRC {
						t.Errorf("CRC %v/%v", ip.CRC, rp.CRC)
					}
					if ip.RecvMarkers != iM || rp.SendMarkers != iM || ip.SendMarkers != rM || rp.RecvMarkers != rM {
						t.Errorf("markers: I %+v R %+v", ip, rp)
					}
					if ip.P2P != (p.offer != 0) || rp.P2P != ip.P2P || ip.RTR != rp.RTR || (ip.P2P && ip.RTR != p.offer) {
						t.Errorf("P2P %v/%v RTR %v/%v", ip.P2P, rp.P2P, ip.RTR, rp.RTR)
					}
					if rev == 2 {
						// The Responder's ORD fits the Initiator's IRD and the
						// Initiator's ORD what the Responder granted.
						if ip.ORD != 8 || rp.IRD != 8 || rp.ORD != 2 || ip.IRD != 4 {
							t.Errorf("IRD/ORD: I %d/%d R %d/%d", ip.IRD, ip.ORD, rp.IRD, rp.ORD)
						}
					}
					if !ip.Initiator || rp.Initiator {
						t.Error("roles")
					}
					for qn := uint32(0); qn < 4; qn++ {
						if ip.SendMSN(qn) != rp.RecvMSN(qn) {
							t.Errorf("QN %d: Initiator starts at MSN %d, Responder expects %d", qn, ip.SendMSN(qn), rp.RecvMSN(qn))
						}
					}
					if err := exchange(ini.c, resp.c); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// TestStartupExtensions negotiates extension sets end to end.
func TestStartupExtensions(t *testing.T) {
	cases := []struct {
		name       string
		iExt, rExt Ext
		iNoAdv     bool
		rNoAdv     bool
		want       Ext
	}{
		{"both all", ExtAll, ExtAll, false, false, ExtAll},
		{"responder 7306 only", ExtAll, ExtRFC7306, false, false, ExtRFC7306},
		{"initiator 7306 only", ExtRFC7306, ExtAll, false, false, ExtRFC7306},
		{"initiator none", 0, ExtAll, false, false, 0},
		{"V2 alone means none", ExtV2, ExtAll, false, false, 0},
		{"initiator not advertising", ExtAll, ExtAll, true, false, 0},
		{"responder not advertising", ExtAll, ExtAll, false, true, 0},
	}
	for _, c := range cases {
		for _, rev := range []uint8{1, 2} {
			t.Run(fmt.Sprintf("%s/rev%d", c.name, rev), func(t *testing.T) {
				icfg := &Config{Rev: rev, Extensions: c.iExt, NoAdvertise: c.iNoAdv, CRC: true}
				rcfg := &Config{Extensions: c.rExt, NoAdvertise: c.rNoAdv}
				ini, resp := startPair(t, icfg, rcfg)
				if ini.err != nil || resp.err != nil {
					t.Fatalf("initiator: %v; responder: %v", ini.err, resp.err)
				}
				defer ini.c.Close()
				defer resp.c.Close()
				if got := ini.c.Params().Extensions; got != c.want {
					t.Errorf("Initiator uses %v, want %v", got, c.want)
				}
				if got := resp.c.Params().Extensions; got != c.want {
					t.Errorf("Responder uses %v, want %v", got, c.want)
				}
				if resp.req.Extensions() != map[bool]Ext{true: 0, false: c.iExt.Normalize()}[c.iNoAdv] {
					t.Errorf("Request advertised %v", resp.req.Extensions())
				}
				if err := exchange(ini.c, resp.c); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	// A V2 connection sends its RTR under RDMAP version 2.
	icfg := DefaultConfig()
	icfg.OfferRTR = RTRRead
	ini, resp := startPair(t, icfg, DefaultConfig())
	if ini.err != nil || resp.err != nil {
		t.Fatalf("V2 Read RTR: %v; %v", ini.err, resp.err)
	}
	ini.c.Close()
	resp.c.Close()
}

// TestStartupPrivateData carries private data both ways, and rejects with
// private data under Rev 1 and Rev 2.
func TestStartupPrivateData(t *testing.T) {
	for _, rev := range []uint8{1, 2} {
		icfg := &Config{Rev: rev, PrivateData: []byte("from initiator")}
		rcfg := &Config{PrivateData: []byte("from responder")}
		ini, resp := startPair(t, icfg, rcfg)
		if ini.err != nil || resp.err != nil {
			t.Fatalf("rev %d: %v; %v", rev, ini.err, resp.err)
		}
		if string(ini.c.PeerPrivateData()) != "from responder" || string(resp.c.PeerPrivateData()) != "from initiator" ||
			string(resp.req.PrivateData()) != "from initiator" || resp.req.Rev() != rev {
			t.Errorf("rev %d: private data %q / %q", rev, ini.c.PeerPrivateData(), resp.c.PeerPrivateData())
		}
		ini.c.Close()
		resp.c.Close()

		// Reject by the ULP after inspecting the Request.
		cc, sc := tcpPair(t)
		ctx := testCtx(t)
		done := make(chan error, 1)
		go func() {
			req, err := ReadRequest(ctx, sc, nil)
			if err != nil {
				done <- err
				return
			}
			if string(req.PrivateData()) != "from initiator" {
				done <- fmt.Errorf("request private data %q", req.PrivateData())
				return
			}
			err = req.Reject([]byte("go away"))
			if err2 := req.Reject(nil); err2 == nil {
				err = errors.New("second Reject accepted")
			}
			if _, err2 := req.Accept(ctx, nil); err2 == nil {
				err = errors.New("Accept after Reject accepted")
			}
			done <- err
		}()
		_, err := Connect(ctx, cc, icfg)
		var re *RejectError
		if !errors.As(err, &re) || string(re.PrivateData) != "go away" || re.Rev != rev {
			t.Errorf("rev %d: Connect = %v, want RejectError with %q", rev, err, "go away")
		}
		if err := <-done; err != nil {
			t.Errorf("rev %d responder: %v", rev, err)
		}
	}
}

// TestStartupResponderRejects: the Responder's own rejections reach the
// Initiator as a RejectError without private data.
func TestStartupResponderRejects(t *testing.T) {
	cases := []struct {
		name       string
		icfg, rcfg *Config
		want       error
	}{
		{"markers refused", &Config{Markers: true}, &Config{RefuseMarkers: true}, ErrMarkersRefused},
		{"no RTR", &Config{P2P: true, OfferRTR: RTRSend}, &Config{AcceptRTR: RTRWrite | RTRRead}, ErrNoRTRModel},
	}
	for _, c := range cases {
		ini, resp := startPair(t, c.icfg, c.rcfg)
		var re *RejectError
		if !errors.As(ini.err, &re) || len(re.PrivateData) != 0 {
			t.Errorf("%s: Connect = %v", c.name, ini.err)
		}
		if !errors.Is(resp.err, c.want) {
			t.Errorf("%s: Accept = %v, want %v", c.name, resp.err, c.want)
		}
	}
}

// TestStartupRequireP2PFallback: an Initiator that wants P2P but talks to a
// Responder without it falls back to plain mode unless it requires P2P.
func TestStartupRequireP2PFallback(t *testing.T) {
	rcfg := &Config{AcceptRTR: 0}
	ini, resp := startPair(t, DefaultConfig(), rcfg)
	if ini.err != nil || resp.err != nil {
		t.Fatalf("%v; %v", ini.err, resp.err)
	}
	if ini.c.Params().P2P || resp.c.Params().P2P {
		t.Error("P2P agreed without the Responder")
	}
	if err := exchange(ini.c, resp.c); err != nil {
		t.Fatal(err)
	}
	ini.c.Close()
	resp.c.Close()

	// RequireP2P: the Initiator sends Terminate 0x07 as its first FPDU.
	// The Responder was not in P2P mode: its Conn is open and receives it.
	icfg := DefaultConfig()
	icfg.RequireP2P = true
	cc, sc := tcpPair(t)
	ctx := testCtx(t)
	got := make(chan []byte, 1)
	go func() {
		defer close(got)
		req, err := ReadRequest(ctx, sc, nil)
		if err != nil {
			return
		}
		c, err := req.Accept(ctx, rcfg)
		if err != nil {
			return
		}
		defer c.Close()
		r := c.FPDU().Reader()
		n, err := r.Next()
		if err != nil {
			return
		}
		buf := make([]byte, n)
		if r.Read(buf) == nil && r.End() == nil {
			got <- buf
		}
	}()
	if _, err := Connect(ctx, cc, icfg); !errors.Is(err, ErrNoRTRModel) {
		t.Errorf("Connect = %v, want ErrNoRTRModel", err)
	}
	if want := hexBytes(t, "4147 00000000 00000002 00000001 00000000 20070000"); string(<-got) != string(want) {
		t.Errorf("the Responder did not receive Terminate %x", want)
	}
}
