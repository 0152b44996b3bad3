package pcapwrite_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/pcapwrite"
)

// packets reads every packet of a capture, copying the data.
func packets(t *testing.T, b []byte) []capture.Packet {
	t.Helper()
	r, err := capture.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var ps []capture.Packet
	for {
		p, err := r.Next()
		if err == io.EOF {
			return ps
		}
		if err != nil {
			t.Fatal(err)
		}
		p.Data = append([]byte(nil), p.Data...)
		ps = append(ps, p)
	}
}

// onesSum is the RFC 1071 sum of b, folded.
func onesSum(sum uint32, b []byte) uint32 {
	for ; len(b) >= 2; b = b[2:] {
		sum += uint32(binary.BigEndian.Uint16(b))
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum > 0xFFFF {
		sum = sum>>16 + sum&0xFFFF
	}
	return sum
}

// checkPacket verifies the IP header checksum (IPv4), the TCP checksum and
// the segment size of one synthesized packet, and returns its TCP payload
// length.
func checkPacket(t *testing.T, p capture.Packet, mss int) int {
	t.Helper()
	if p.LinkType != capture.LinkEthernet {
		t.Fatalf("frame %d: link type %d", p.Frame, p.LinkType)
	}
	ip, err := capture.LinkPayload(p.LinkType, p.Data)
	if err != nil {
		t.Fatal(err)
	}
	var pseudo uint32
	var tcp []byte
	switch ip[0] >> 4 {
	case 4:
		if s := onesSum(0, ip[:20]); s != 0xFFFF {
			t.Errorf("frame %d: IPv4 header checksum sums to %#x", p.Frame, s)
		}
		if int(binary.BigEndian.Uint16(ip[2:])) != len(ip) {
			t.Errorf("frame %d: IPv4 total length %d, packet %d", p.Frame, binary.BigEndian.Uint16(ip[2:]), len(ip))
		}
		tcp = ip[20:]
		pseudo = onesSum(0, ip[12:20])
	case 6:
		if int(binary.BigEndian.Uint16(ip[4:]))+40 != len(ip) {
			t.Errorf("frame %d: IPv6 payload length %d, packet %d", p.Frame, binary.BigEndian.Uint16(ip[4:]), len(ip))
		}
		tcp = ip[40:]
		pseudo = onesSum(0, ip[8:40])
	default:
		t.Fatalf("frame %d: IP version %d", p.Frame, ip[0]>>4)
	}
	if s := onesSum(pseudo+6+uint32(len(tcp)), tcp); s != 0xFFFF {
		t.Errorf("frame %d: TCP checksum sums to %#x", p.Frame, s)
	}
	n := len(tcp) - 20
	if n > mss {
		t.Errorf("frame %d: %d payload bytes, MSS %d", p.Frame, n, mss)
	}
	return n
}

// conn reassembles a capture holding one connection.
func conn(t *testing.T, b []byte) *capture.Conn {
	t.Helper()
	r, err := capture.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	a, err := capture.ReadAll(r, capture.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Notes) != 0 {
		t.Errorf("notes: %+v", a.Notes)
	}
	cs := a.Conns()
	if len(cs) != 1 {
		t.Fatalf("%d connections, want 1", len(cs))
	}
	for i, s := range cs[0].Dir {
		if len(s.Gaps) != 0 || s.Retransmitted+s.Overlapping+s.OutOfOrder != 0 {
			t.Errorf("direction %d: gaps %v, retransmitted %d, overlapping %d, out of order %d",
				i, s.Gaps, s.Retransmitted, s.Overlapping, s.OutOfOrder)
		}
	}
	return cs[0]
}

// stream returns the bytes of one direction.
func stream(s *capture.Stream) []byte {
	var b []byte
	for _, r := range s.Runs() {
		b = append(b, r.Data...)
	}
	return b
}

func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*31)
	}
	return b
}

// TestFlowRoundTrip: a flow's handshake, data both ways cut at the MSS,
// and FINs read back as one connection with the same bytes, correct
// checksums and every segment within the MSS, for IPv4 and IPv6.
func TestFlowRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		client, server string
		mss            int
	}{
		{"10.0.0.1:40000", "10.0.0.2:4791", 100},
		{"[2001:db8::1]:40000", "[2001:db8::2]:4791", 1460},
		{"[2001:db8::1]:40000", "[2001:db8::2]:4791", 1},
	} {
		var buf bytes.Buffer
		w, err := pcapwrite.NewWriter(&buf, &pcapwrite.Options{MSS: tc.mss})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
		f, err := w.NewFlow(t0, netip.MustParseAddrPort(tc.client), netip.MustParseAddrPort(tc.server))
		if err != nil {
			t.Fatal(err)
		}
		var want [2][]byte
		for i, n := range []int{24, 20, 1, 0, 350, 2999, 7, 100} {
			side := pcapwrite.Side(i % 2)
			d := fill(n, byte(i))
			want[side] = append(want[side], d...)
			if err := f.Data(t0.Add(time.Duration(i)*time.Millisecond), side, d); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Fin(t0.Add(time.Second), pcapwrite.Client); err != nil {
			t.Fatal(err)
		}
		if err := f.Data(t0.Add(time.Second), pcapwrite.Client, []byte("after FIN")); err != nil {
			t.Fatal(err)
		}
		if err := f.Fin(t0.Add(2*time.Second), pcapwrite.Server); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		ps := packets(t, buf.Bytes())
		total := 0
		for _, p := range ps {
			total += checkPacket(t, p, tc.mss)
		}
		if total != len(want[0])+len(want[1]) {
			t.Errorf("%s: %d payload bytes in the packets, want %d", tc.client, total, len(want[0])+len(want[1]))
		}
		if !ps[0].Time.Equal(t0) || !ps[len(ps)-1].Time.Equal(t0.Add(2*time.Second)) {
			t.Errorf("timestamps %v .. %v", ps[0].Time, ps[len(ps)-1].Time)
		}
		c := conn(t, buf.Bytes())
		if !c.SawSYN || c.A.String() != tc.client || c.B.String() != tc.server {
			t.Errorf("connection %v -> %v, SYN %v", c.A, c.B, c.SawSYN)
		}
		for i := range want {
			if got := stream(c.Dir[i]); !bytes.Equal(got, want[i]) {
				t.Errorf("%s MSS %d: direction %d: %d bytes, want %d", tc.client, tc.mss, i, len(got), len(want[i]))
			}
			if !c.Dir[i].SawFIN {
				t.Errorf("direction %d: no FIN", i)
			}
		}
	}
}

// TestFlowAddresses: mapped addresses are unmapped, a mixed pair is
// written as IPv6, and invalid addresses are refused.
func TestFlowAddresses(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcapwrite.NewWriter(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.NewFlow(time.Now(), netip.MustParseAddrPort("[::ffff:127.0.0.1]:1"), netip.MustParseAddrPort("127.0.0.1:2"))
	if err != nil {
		t.Fatal(err)
	}
	if c, s := f.Addrs(); !c.Addr().Is4() || !s.Addr().Is4() {
		t.Errorf("mapped pair written as %v %v", c, s)
	}
	f, err = w.NewFlow(time.Now(), netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("[fe80::1%eth0]:2"))
	if err != nil {
		t.Fatal(err)
	}
	if c, s := f.Addrs(); c.String() != "[::ffff:127.0.0.1]:1" || s.String() != "[fe80::1]:2" {
		t.Errorf("mixed pair written as %v %v", c, s)
	}
	if _, err := w.NewFlow(time.Now(), netip.AddrPort{}, netip.MustParseAddrPort("127.0.0.1:2")); !errors.Is(err, pcapwrite.ErrAddr) {
		t.Errorf("invalid address: %v", err)
	}
}

// errWriter fails every write.
type errWriter struct{ n int }

var errDisk = errors.New("disk full")

func (e *errWriter) Write(p []byte) (int, error) {
	if e.n == 0 {
		return 0, errDisk
	}
	e.n--
	return len(p), nil
}

// TestWriterErrors: MSS bounds, a write error kept and returned by every
// later call, ErrClosed after Close.
func TestWriterErrors(t *testing.T) {
	for _, mss := range []int{-1, pcapwrite.MaxMSS + 1} {
		if _, err := pcapwrite.NewWriter(io.Discard, &pcapwrite.Options{MSS: mss}); !errors.Is(err, pcapwrite.ErrMSS) {
			t.Errorf("MSS %d: %v", mss, err)
		}
	}
	w, err := pcapwrite.NewWriter(&errWriter{n: 1}, &pcapwrite.Options{BufferSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort("10.0.0.1:1")
	if _, err := w.NewFlow(time.Now(), ap, ap); !errors.Is(err, errDisk) {
		t.Errorf("NewFlow: %v, want the write error", err)
	}
	if err := w.Flush(); !errors.Is(err, errDisk) || !errors.Is(w.Err(), errDisk) {
		t.Errorf("Flush %v, Err %v", err, w.Err())
	}
	if err := w.Close(); !errors.Is(err, errDisk) {
		t.Errorf("Close: %v", err)
	}

	var buf bytes.Buffer
	w, err = pcapwrite.NewWriter(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.NewFlow(time.Now(), ap, netip.MustParseAddrPort("10.0.0.2:2"))
	if err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("%d bytes written before Flush", buf.Len())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Data(time.Now(), pcapwrite.Client, []byte("x")); err != pcapwrite.ErrClosed {
		t.Errorf("Data after Close: %v", err)
	}
	if err := w.Close(); err != pcapwrite.ErrClosed {
		t.Errorf("second Close: %v", err)
	}
	if n := len(packets(t, buf.Bytes())); n != 3 {
		t.Errorf("%d packets, want the 3 of the handshake", n)
	}
}

// TestFlowConcurrent: both directions written from their own goroutines
// (and a second flow from a third) keep each direction's bytes in order,
// with timestamps that never go back.
func TestFlowConcurrent(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcapwrite.NewWriter(&buf, &pcapwrite.Options{MSS: 500})
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.NewFlow(time.Now(), netip.MustParseAddrPort("10.0.0.1:1000"), netip.MustParseAddrPort("10.0.0.2:2000"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := w.NewFlow(time.Now(), netip.MustParseAddrPort("10.0.0.3:1000"), netip.MustParseAddrPort("10.0.0.2:2000"))
	if err != nil {
		t.Fatal(err)
	}
	var want [2][]byte
	var wg sync.WaitGroup
	for side := range 2 {
		for i := range 200 {
			want[side] = append(want[side], fill(1+i*7%900, byte(side*100+i))...)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if err := f.Data(time.Now(), pcapwrite.Side(side), fill(1+i*7%900, byte(side*100+i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 100 {
			if err := g.Data(time.Now(), pcapwrite.Server, []byte("other flow")); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ps := packets(t, buf.Bytes())
	for i := 1; i < len(ps); i++ {
		if ps[i].Time.Before(ps[i-1].Time) {
			t.Fatalf("frame %d goes back in time", ps[i].Frame)
		}
	}
	r, err := capture.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	a, err := capture.ReadAll(r, capture.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cs := a.Conns()
	if len(cs) != 2 {
		t.Fatalf("%d connections", len(cs))
	}
	for i := range want {
		if got := stream(cs[0].Dir[i]); !bytes.Equal(got, want[i]) {
			t.Errorf("direction %d: %d bytes differ from the %d written", i, len(got), len(want[i]))
		}
	}
	if got := stream(cs[1].Dir[1]); len(got) != 1000 {
		t.Errorf("second flow: %d bytes", len(got))
	}
}

// TestConnTCP: a Listener-wrapped server records a real loopback
// connection with the client as the opener, both directions, and the FINs
// of CloseWrite and of Close.
func TestConnTCP(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcapwrite.NewWriter(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := pcapwrite.Listener(raw, w)
	defer ln.Close()
	req, reply := fill(5000, 1), fill(3000, 2)
	errc := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer nc.Close()
		got, err := io.ReadAll(nc) // until the client's CloseWrite
		if err == nil && !bytes.Equal(got, req) {
			err = errors.New("server read other bytes")
		}
		if err == nil {
			_, err = nc.Write(reply)
		}
		errc <- err
	}()
	nc, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(req); err != nil {
		t.Fatal(err)
	}
	if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(nc)
	if err != nil || !bytes.Equal(got, reply) {
		t.Fatalf("client read %d bytes, %v", len(got), err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c := conn(t, buf.Bytes())
	if c.A != nc.LocalAddr().(*net.TCPAddr).AddrPort() || c.B != raw.Addr().(*net.TCPAddr).AddrPort() || !c.SawSYN {
		t.Errorf("connection %v -> %v, want %v -> %v", c.A, c.B, nc.LocalAddr(), raw.Addr())
	}
	if !bytes.Equal(stream(c.Dir[0]), req) || !bytes.Equal(stream(c.Dir[1]), reply) {
		t.Errorf("streams of %d and %d bytes", len(stream(c.Dir[0])), len(stream(c.Dir[1])))
	}
	if !c.Dir[0].SawFIN || !c.Dir[1].SawFIN {
		t.Errorf("FINs %v %v", c.Dir[0].SawFIN, c.Dir[1].SawFIN)
	}
}

// TestConnPipe: a connection without IP addresses is recorded between
// stand-in addresses; CloseWrite is refused when the wrapped connection
// has none.
func TestConnPipe(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcapwrite.NewWriter(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := net.Pipe()
	defer p2.Close()
	c := pcapwrite.Conn(p1, w)
	go func() {
		b := make([]byte, 5)
		if _, err := io.ReadFull(p2, b); err == nil {
			_, _ = p2.Write([]byte("world"))
		}
	}()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "world" {
		t.Fatalf("%q %v", b, err)
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); !errors.Is(err, pcapwrite.ErrNoCloseWrite) {
		t.Errorf("CloseWrite: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cc := conn(t, buf.Bytes())
	if cc.A.String() != "192.0.2.1:49152" || cc.B.String() != "192.0.2.2:49153" {
		t.Errorf("addresses %v %v", cc.A, cc.B)
	}
	if string(stream(cc.Dir[0])) != "hello" || string(stream(cc.Dir[1])) != "world" || !cc.Dir[0].SawFIN || cc.Dir[1].SawFIN {
		t.Errorf("streams %q %q, FINs %v %v", stream(cc.Dir[0]), stream(cc.Dir[1]), cc.Dir[0].SawFIN, cc.Dir[1].SawFIN)
	}
}
