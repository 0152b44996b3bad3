package main

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/capture"
)

// The -update flag regenerates testdata/decode/*.golden:
//
//	go test ./cmd/iwarp -run TestDecodeGolden -update
//
// It is registered here unless another test file of the package already did.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files of the tests")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// Test material kept in the repository, relative to this package: the
// wire vectors and the captures of real siw traffic.
const (
	vectorDir  = "../../internal/vectors/testdata"
	captureDir = "../../interop/captures"
)

// goldenInputs lists every capture and vector file with a golden output.
func goldenInputs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{captureDir + "/*.pcap", captureDir + "/*.pcapng", captureDir + "/*.hex", vectorDir + "/*.tsv"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) == 0 {
			t.Fatalf("no test material matches %s", pat)
		}
		files = append(files, m...)
	}
	return files
}

// TestDecodeGolden decodes every capture and vector file and compares the
// output with its golden file. A file with nothing to decode (atomics.tsv,
// a table of atomic operations, holds no byte stream) exits 1; its golden
// file ends with the exit status and the message.
func TestDecodeGolden(t *testing.T) {
	for _, in := range goldenInputs(t) {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			switch st := runDecode([]string{in}, &out, &errOut); {
			case st == exitFail && strings.Contains(errOut.String(), "nothing to decode"):
				fmt.Fprintf(&out, "exit %d: %s", st, errOut.String())
			case st != exitOK:
				t.Fatalf("exit %d: %s", st, errOut.String())
			}
			golden := filepath.Join("testdata", "decode", name+".golden")
			if updating() {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("output differs from %s:\n%s", golden, lineDiff(string(want), out.String()))
			}
		})
	}
}

// lineDiff shows the first differing lines.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\nwant: %s\ngot:  %s", i+1, a, b)
		}
	}
	return "(lengths differ)"
}

func TestDecodeErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if st := runDecode([]string{"testdata/decode/no-such-file.pcap"}, &out, &errOut); st == 0 {
		t.Errorf("missing file: exit 0")
	}
	if st := runDecode(nil, &out, &errOut); st != 2 {
		t.Errorf("no arguments: exit %d, want 2", st)
	}
	if st := runDecode([]string{"-port", "x", "f"}, &out, &errOut); st != 2 {
		t.Errorf("bad -port: exit %d, want 2", st)
	}
	bad := filepath.Join(t.TempDir(), "bad.tsv")
	if err := os.WriteFile(bad, []byte("name\tdirection\thex\nx\tI->R\tzz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st := runDecode([]string{bad}, &out, &errOut); st != 1 {
		t.Errorf("malformed vector file: exit %d, want 1", st)
	}
	binary := filepath.Join(t.TempDir(), "x.bin")
	if err := os.WriteFile(binary, []byte{0, 1, 2, 0xff, 0xfe}, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := runDecode([]string{binary}, &out, &errOut); st != 1 {
		t.Errorf("binary file: exit %d, want 1", st)
	}
	// A capture cut inside a packet: what was read is printed, exit 1.
	pcap, err := os.ReadFile(filepath.Join(captureDir, "f_eth0.pcap"))
	if err != nil {
		t.Skip(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(cut, pcap[:len(pcap)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if st := runDecode([]string{cut}, &out, &errOut); st != 1 || !strings.Contains(out.String(), "MPA Request") ||
		!strings.Contains(errOut.String(), "damaged") {
		t.Errorf("cut capture: exit %d, output %q, errors %q", st, out.String(), errOut.String())
	}
}

// TestDecodeFlags: -v lists connections that are not iWARP, -port decodes a
// mid-connection CRC-off stream, -payload sets the preview, and capture
// notes (an IP fragment) are always printed; a capture with no iWARP
// connection exits 1.
func TestDecodeFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.pcap")
	var buf bytes.Buffer
	w, err := capture.NewPcapWriter(&buf, capture.LinkEthernet)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := &capture.Flow{W: w, Time: at, Client: netip.MustParseAddrPort("192.0.2.1:40000"), Server: netip.MustParseAddrPort("192.0.2.2:80")}
	if err := web.Open(); err != nil {
		t.Fatal(err)
	}
	if err := web.Send(0, []byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// A CRC-off Send from the middle of an MPA connection on port 7000.
	send, _ := hex.DecodeString("00224143000000000000000000000001000000000000000000000000000000000000000000000000")
	frame := capture.AppendTCPFrame(nil, &capture.TCPFrame{Src: netip.MustParseAddrPort("192.0.2.3:41000"),
		Dst: netip.MustParseAddrPort("192.0.2.4:7000"), Seq: 777, Flags: capture.TCPAck, Payload: send})
	if err := w.WritePacket(at, frame); err != nil {
		t.Fatal(err)
	}
	frag := append([]byte(nil), frame...)
	frag[14+6] = 0x20 // IPv4 MF
	if err := w.WritePacket(at, frag); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(status int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if st := runDecode(append(args, file), &out, &errOut); st != status {
			t.Fatalf("%v: exit %d, want %d: %s", args, st, status, errOut.String())
		}
		if status == exitFail && !strings.Contains(errOut.String(), "nothing to decode: none of the 2 TCP connections is iWARP") {
			t.Errorf("%v: stderr %q", args, errOut.String())
		}
		return out.String()
	}
	// Without -port nothing is iWARP: exit 1, after the notes.
	plain := run(exitFail)
	if strings.Contains(plain, ":80") || strings.Contains(plain, "Send") || !strings.Contains(plain, "IP fragment 192.0.2.3 -> 192.0.2.4 not reassembled") {
		t.Errorf("default output:\n%s", plain)
	}
	if v := run(exitFail, "-v"); !strings.Contains(v, "192.0.2.2:80, not iWARP") {
		t.Errorf("-v output:\n%s", v)
	}
	p := run(exitOK, "-port", "7000", "-payload", "2")
	if !strings.Contains(p, "Send(0x3) QN=0 MSN=1 MO=0 payload=16 data=0000..") || !strings.Contains(p, "[assumed off]") {
		t.Errorf("-port output:\n%s", p)
	}
}
