package iwarp_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/decode"
	"github.com/goiwarp/iwarp/internal/wire"
)

// captureSession runs Send, Write, Read and two FetchAdds between two QPs
// connected over network at addr, the client side recorded through
// Capture.Dialer and the server side through Capture.Listener, each into
// its own file, and returns the two file names.
func captureSession(t *testing.T, network, addr string, mss int) (clientFile, serverFile string) {
	t.Helper()
	dir := t.TempDir()
	clientFile, serverFile = filepath.Join(dir, "client.pcap"), filepath.Join(dir, "server.pcap")
	newCap := func(name string) (*iwarp.Capture, *os.File) {
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := iwarp.NewCapture(f, &iwarp.CaptureOptions{MSS: mss})
		if err != nil {
			t.Fatal(err)
		}
		return c, f
	}
	cc, cf := newCap(clientFile)
	sc, sf := newCap(serverFile)

	raw, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s loopback: %v", network, err)
	}
	ln := iwarp.NewListener(sc.Listener(raw), nil)
	defer ln.Close()
	a, b := newEndpoint(t), newEndpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cerr, aerr := dialAccept(ctx, ln, "tcp", raw.Addr().String(), a.qp, b.qp, &iwarp.ConnOptions{Dialer: cc.Dialer(nil)}, nil); cerr != nil || aerr != nil {
		t.Fatalf("connect: %v, accept: %v", cerr, aerr)
	}

	// Send of 3000 bytes: more than one 1460-byte segment.
	msg := bytes.Repeat([]byte("captured send payload. "), 140)[:3000]
	rbuf := make([]byte, len(msg))
	rmr, err := b.pd.RegisterMemory(rbuf, iwarp.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{rmr.SGE(0, len(rbuf))}}); err != nil {
		t.Fatal(err)
	}
	smr, err := a.pd.RegisterMemory(append([]byte(nil), msg...), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Send(ctx, smr.SGE(0, len(msg))); err != nil {
		t.Fatalf("send: %v", err)
	}
	if c, err := b.cq.Next(ctx); err != nil || c.Status != iwarp.StatusSuccess || c.Len != len(msg) {
		t.Fatalf("receive: %+v %v", c, err)
	}
	if !bytes.Equal(rbuf, msg) {
		t.Fatal("received bytes differ")
	}

	// Write 5000 bytes into b's memory, then Read them back.
	region, err := b.pd.RegisterMemory(make([]byte, 5000), iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead|iwarp.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	wdata := make([]byte, 5000)
	for i := range wdata {
		wdata[i] = byte(i * 7)
	}
	wmr, err := a.pd.RegisterMemory(wdata, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Write(ctx, region.Remote(), wmr.SGE(0, len(wdata))); err != nil {
		t.Fatalf("write: %v", err)
	}
	sink := make([]byte, 5000)
	sinkMR, err := a.pd.RegisterMemory(sink, iwarp.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Read(ctx, region.Remote(), sinkMR.SGE(0, len(sink))); err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(sink, wdata) {
		t.Fatal("read back bytes differ from those written")
	}

	// Two FetchAdds on a counter.
	counter, err := b.pd.RegisterMemory(alignedBuf(8), iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{0, 5} {
		got, err := a.qp.FetchAdd(ctx, counter.Remote(), 5)
		if err != nil || got != want {
			t.Fatalf("FetchAdd %d: %d %v, want %d", i, got, err, want)
		}
	}

	if err := a.qp.Disconnect(ctx); err != nil {
		t.Fatalf("disconnect: %v", err)
	}
	select {
	case <-b.qp.Done():
	case <-ctx.Done():
		t.Fatal("server QP did not see the disconnect")
	}
	a.qp.Close()
	b.qp.Close()
	for _, c := range []struct {
		c *iwarp.Capture
		f *os.File
	}{{cc, cf}, {sc, sf}} {
		if err := c.c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.c.Close(); err != iwarp.ErrClosed {
			t.Fatalf("second Close: %v, want ErrClosed", err)
		}
		if err := c.f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// CAPTURE_KEEP=dir keeps the captures for a look in Wireshark.
	if d := os.Getenv("CAPTURE_KEEP"); d != "" {
		for _, f := range []string{clientFile, serverFile} {
			b, _ := os.ReadFile(f)
			_ = os.WriteFile(filepath.Join(d, network+"-"+filepath.Base(f)), b, 0o644)
		}
	}
	return clientFile, serverFile
}

// decodeCapture reads a capture with our decoder: it must hold one
// connection with both MPA frames, and every FPDU must be CRC-good and
// valid. It returns the connection and the opcodes seen, in order.
func decodeCapture(t *testing.T, file string) (*decode.Conn, []wire.Opcode) {
	t.Helper()
	asm, err := capture.ReadFile(file, capture.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(asm.Notes) != 0 {
		t.Errorf("%s: capture notes %+v", file, asm.Notes)
	}
	conns := asm.Conns()
	if len(conns) != 1 {
		t.Fatalf("%s: %d connections, want 1", file, len(conns))
	}
	c := conns[0]
	if !c.SawSYN {
		t.Errorf("%s: no SYN", file)
	}
	for i, s := range c.Dir {
		if len(s.Gaps) != 0 || s.Retransmitted != 0 || s.Overlapping != 0 || s.OutOfOrder != 0 {
			t.Errorf("%s: direction %d: gaps %v, %d retransmitted, %d overlapping, %d out of order",
				file, i, s.Gaps, s.Retransmitted, s.Overlapping, s.OutOfOrder)
		}
	}
	dc := decode.DecodeConn(c, decode.Options{})
	if !dc.MPA || !dc.Startup || dc.Initiator != 0 || dc.Rejected {
		t.Fatalf("%s: MPA %v, startup %v, initiator %d, rejected %v", file, dc.MPA, dc.Startup, dc.Initiator, dc.Rejected)
	}
	var ops []wire.Opcode
	for i := range dc.Items {
		it := &dc.Items[i]
		switch it.Kind {
		case decode.KindMPA:
			if it.MPAErr != nil {
				t.Errorf("%s: MPA frame: %v", file, it.MPAErr)
			}
		case decode.KindFPDU:
			if !it.CRCGood() || it.FPDUErr != nil || it.ULPDUErr != nil || it.CheckErr != nil {
				t.Errorf("%s: FPDU at %d/%d: CRC good %v, %v %v %v", file, it.Dir, it.Off, it.CRCGood(), it.FPDUErr, it.ULPDUErr, it.CheckErr)
			}
			ops = append(ops, it.ULPDU.Opcode)
		default:
			t.Errorf("%s: unexpected item %v: %s", file, it.Kind, it.Text)
		}
	}
	return dc, ops
}

// streams returns the bytes of both directions of a capture's connection.
func streams(t *testing.T, c *capture.Conn) [2][]byte {
	t.Helper()
	var out [2][]byte
	for i, s := range c.Dir {
		for _, r := range s.Runs() {
			out[i] = append(out[i], r.Data...)
		}
	}
	return out
}

// checkSession decodes both captures of a session: each holds the whole
// conversation (the same bytes both ways, the same addresses, the FINs),
// with the opcodes of the operations run.
func checkSession(t *testing.T, clientFile, serverFile string, v6 bool) {
	t.Helper()
	cdc, cops := decodeCapture(t, clientFile)
	sdc, sops := decodeCapture(t, serverFile)
	if cdc.C.A != sdc.C.A || cdc.C.B != sdc.C.B {
		t.Errorf("addresses: client capture %v-%v, server capture %v-%v", cdc.C.A, cdc.C.B, sdc.C.A, sdc.C.B)
	}
	if got := cdc.C.A.Addr().Is6(); got != v6 {
		t.Errorf("client address %v: IPv6 %v, want %v", cdc.C.A, got, v6)
	}
	if got := cdc.C.B.Addr().IsLoopback(); !got {
		t.Errorf("server address %v is not loopback", cdc.C.B)
	}
	cs, ss := streams(t, cdc.C), streams(t, sdc.C)
	for i := range cs {
		if len(cs[i]) == 0 || !bytes.Equal(cs[i], ss[i]) {
			t.Errorf("direction %d: client capture %d bytes, server capture %d bytes, equal %v", i, len(cs[i]), len(ss[i]), bytes.Equal(cs[i], ss[i]))
		}
	}
	// The client's FIN is in both captures: it disconnected first.
	if !cdc.C.Dir[0].SawFIN || !sdc.C.Dir[0].SawFIN {
		t.Errorf("client FIN: client capture %v, server capture %v", cdc.C.Dir[0].SawFIN, sdc.C.Dir[0].SawFIN)
	}
	if !slicesEqualOps(cops, sops) {
		t.Errorf("opcodes differ: client capture %v, server capture %v", cops, sops)
	}
	seen := map[wire.Opcode]int{}
	for _, op := range cops {
		seen[op]++
	}
	for _, op := range []wire.Opcode{wire.OpSend, wire.OpWrite, wire.OpReadRequest, wire.OpReadResponse, wire.OpAtomicRequest, wire.OpAtomicResponse} {
		if seen[op] == 0 {
			t.Errorf("no %v in the capture; opcodes %v", op, cops)
		}
	}
	if seen[wire.OpAtomicRequest] != 2 || seen[wire.OpAtomicResponse] != 2 || seen[wire.OpReadRequest] != 1 {
		t.Errorf("opcode counts %v", seen)
	}
}

func slicesEqualOps(a, b []wire.Opcode) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// tsharkVerdicts runs tshark on a capture and returns its MPA CRC verdicts
// ("Good" or "Bad") and the number of FPDUs it dissected. It skips the test
// when tshark is not installed.
func tsharkVerdicts(t *testing.T, file string) (verdicts []string, fpdus int) {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed: the Wireshark check needs tshark in PATH (apt-get install tshark)")
	}
	args := []string{"-r", file, "-o", "tcp.try_heuristic_first:TRUE",
		"--disable-heuristic", "rpcrdma_iwarp", "--disable-heuristic", "smb_direct_iwarp", "-T", "pdml"}
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark %v: %v", args, err)
	}
	for _, m := range regexp.MustCompile(`name="iwarp_mpa.crc_check" showname="[^"]*\((Good|Bad) CRC32`).FindAllStringSubmatch(string(out), -1) {
		verdicts = append(verdicts, m[1])
	}
	fpdus = strings.Count(string(out), `name="iwarp_mpa.fpdu"`)
	return verdicts, fpdus
}

// checkTshark requires tshark to find every FPDU our decoder finds, each
// with a good CRC.
func checkTshark(t *testing.T, files ...string) {
	t.Helper()
	for _, file := range files {
		_, ops := decodeCapture(t, file)
		verdicts, fpdus := tsharkVerdicts(t, file)
		t.Logf("%s: %d FPDUs decoded, tshark: %d FPDUs, %d CRC verdicts", filepath.Base(file), len(ops), fpdus, len(verdicts))
		if len(verdicts) != len(ops) || fpdus != len(ops) {
			t.Errorf("%s: tshark found %d FPDUs with %d CRC verdicts, we decoded %d FPDUs", file, fpdus, len(verdicts), len(ops))
		}
		for i, v := range verdicts {
			if v != "Good" {
				t.Errorf("%s: tshark CRC verdict %d: %s", file, i, v)
			}
		}
		// The synthesized TCP/IP: checksums good, no TCP analysis
		// remark (lost segment, ACK of unseen data, retransmission...).
		args := []string{"-r", file, "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
			"-Y", "tcp.analysis.flags || tcp.checksum.status != 1 || ip.checksum.status == 0"}
		out, err := exec.Command("tshark", args...).Output()
		if err != nil {
			t.Fatalf("tshark %v: %v", args, err)
		}
		if len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("%s: tshark flags frames:\n%s", file, out)
		}
	}
}

// TestCaptureIPv4: a session over 127.0.0.1 captured on both sides with
// Ethernet-sized segments decodes with our decoder and with tshark, every
// FPDU CRC-good.
func TestCaptureIPv4(t *testing.T) {
	cf, sf := captureSession(t, "tcp4", "127.0.0.1:0", 0)
	checkSession(t, cf, sf, false)
	checkTshark(t, cf, sf)
}

// TestCaptureIPv6: the same over [::1], with 65000-byte segments.
func TestCaptureIPv6(t *testing.T) {
	cf, sf := captureSession(t, "tcp6", "[::1]:0", 65000)
	checkSession(t, cf, sf, true)
	checkTshark(t, cf, sf)
}

// TestCaptureOptions: an MSS out of range is refused; a Flush after Close
// fails with ErrClosed.
func TestCaptureOptions(t *testing.T) {
	for _, mss := range []int{-1, 65496} {
		if _, err := iwarp.NewCapture(&bytes.Buffer{}, &iwarp.CaptureOptions{MSS: mss}); err == nil {
			t.Errorf("MSS %d accepted", mss)
		}
	}
	var buf bytes.Buffer
	c, err := iwarp.NewCapture(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil || buf.Len() != 24 {
		t.Fatalf("Flush: %v, %d bytes, want the 24-byte file header", err, buf.Len())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != iwarp.ErrClosed {
		t.Fatalf("Flush after Close: %v", err)
	}
}

// ExampleCapture records the Initiator's connection into qp.pcap through
// ConnOptions.Dialer. A Responder records its side the same way by giving
// NewListener a net.Listener wrapped with Capture.Listener.
func ExampleCapture() {
	f, err := os.Create(filepath.Join(os.TempDir(), "qp.pcap"))
	if err != nil {
		panic(err)
	}
	defer f.Close()
	capt, err := iwarp.NewCapture(f, nil)
	if err != nil {
		panic(err)
	}
	defer capt.Close() // flushes the file

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, _ := dev.AllocPD()
	cq, _ := dev.NewCQ(16, nil)
	newQP := func() *iwarp.QP {
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq})
		if err != nil {
			panic(err)
		}
		return qp
	}
	client, server := newQP(), newQP()
	defer client.Close()
	defer server.Close()

	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	go func() {
		if req, err := ln.Accept(ctx); err == nil {
			_ = req.Accept(ctx, server, nil)
		}
	}()
	opts := &iwarp.ConnOptions{Dialer: capt.Dialer(nil)} // records this connection
	if err := client.Connect(ctx, "tcp", ln.Addr().String(), opts); err != nil {
		panic(err)
	}
	_ = client.Disconnect(ctx)
}
