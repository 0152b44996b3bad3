package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/nvmetest"
	"github.com/goiwarp/iwarp/nvmeof/target"
)

// TestNvmfHostFlags: bad flags exit 2 having done nothing; -h exits 0.
func TestNvmfHostFlags(t *testing.T) {
	closed := freePort(t)
	runExitCases(t, []exitCase{
		{name: "help", args: []string{"nvmf-host", "-h"}, code: exitOK, out: "usage: iwarp nvmf-host"},
		{name: "unknown flag", args: []string{"nvmf-host", "-x"}, code: exitUsage},
		{name: "argument", args: []string{"nvmf-host", "extra"}, code: exitUsage, errOut: `unexpected argument "extra"`},
		{name: "rw", args: []string{"nvmf-host", "-rw", "trim"}, code: exitUsage, errOut: "-rw trim: must be read"},
		{name: "bs", args: []string{"nvmf-host", "-rw", "read", "-bs", "4x"}, code: exitUsage, errOut: "-bs 4x"},
		{name: "bs small", args: []string{"nvmf-host", "-rw", "read", "-bs", "100"}, code: exitUsage, errOut: "-bs 100"},
		{name: "qd", args: []string{"nvmf-host", "-rw", "read", "-qd", "0"}, code: exitUsage, errOut: "-qd 0"},
		{name: "qsize", args: []string{"nvmf-host", "-qsize", "1"}, code: exitUsage, errOut: "-qsize 1"},
		{name: "both", args: []string{"nvmf-host", "-verify", "8", "-rw", "read"}, code: exitUsage, errOut: "not both"},
		{name: "duration", args: []string{"nvmf-host", "-d", "0s"}, code: exitUsage, errOut: "-d 0s"},
		{name: "port", args: []string{"nvmf-host", "-a", "127.0.0.1:1", "-p", "2"}, code: exitUsage, errOut: "-a 127.0.0.1:1"},
		{name: "no target", args: []string{"nvmf-host", "-p", closed, "-timeout", "2s"}, code: exitFail,
			errOut: "iwarp nvmf-host: connect to 127.0.0.1:" + closed},
	})
}

func TestNvmfHostSilentTarget(t *testing.T) {
	silent := silentServer(t)
	start := time.Now()
	code, _, errOut := runCLI(t, "nvmf-host", "-a", silent, "-timeout", "300ms")
	if code != exitFail || !strings.Contains(errOut, "connect to") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v with -timeout 300ms", d)
	}
}

func TestNvmfParseSize(t *testing.T) {
	for in, want := range map[string]int{"512": 512, "4k": 4096, "128K": 128 << 10, "1m": 1 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("%s: %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "k", "-4k", "4g", "x"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestNvmfFillPatternDistinct(t *testing.T) {
	a, b := make([]byte, 2048), make([]byte, 2048)
	fillPattern(a, 512, 10, [8]byte{1})
	fillPattern(b, 512, 10, [8]byte{2})
	if bytes.Equal(a, b) {
		t.Fatal("two runs wrote the same pattern")
	}
	if bytes.Equal(a[:512], a[512:1024]) {
		t.Fatal("two blocks hold the same pattern")
	}
	c := make([]byte, 512)
	fillPattern(c, 512, 11, [8]byte{1})
	if !bytes.Equal(c, a[512:1024]) {
		t.Fatal("a block's pattern depends on where the write began")
	}
}

func TestNvmfPrintLoad(t *testing.T) {
	var b bytes.Buffer
	lat := []time.Duration{10 * time.Microsecond, 20 * time.Microsecond, 30 * time.Microsecond}
	printLoad(&b, "read", 123000, 4096, 10001*time.Millisecond, lat)
	out := b.String()
	for _, want := range []string{"read: IOPS=12.3k, BW=48.0MiB/s (50.4MB/s)(480MiB/10001msec)", "p50=20.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// startNvmfTarget serves an in-process nvmeof/target of size bytes on
// loopback until the test ends and returns its port and NQN.
func startNvmfTarget(t *testing.T, size int64) (port, nqn string) {
	t.Helper()
	b, err := target.NewMemoryBackend(size)
	if err != nil {
		t.Fatal(err)
	}
	nqn = "nqn.2024-01.test:cli"
	_, addr := nvmetest.Serve(t, &target.Config{NQN: nqn, Backend: b})
	_, port, _ = net.SplitHostPort(addr)
	return port, nqn
}

// TestNvmfHostEndToEnd: identify, discovery, -verify and a short -rw
// against an in-process target.
func TestNvmfHostEndToEnd(t *testing.T) {
	port, nqn := startNvmfTarget(t, 4<<20)
	runExitCases(t, []exitCase{
		{name: "identify", args: []string{"nvmf-host", "-p", port, "-nqn", nqn}, code: exitOK,
			out: "namespace 1: 8192 blocks of 512 bytes (4.00 MiB)"},
		{name: "discovery", args: []string{"nvmf-host", "-p", port}, code: exitOK,
			out: "subnqn:  " + nqn},
		{name: "verify", args: []string{"nvmf-host", "-p", port, "-nqn", nqn, "-verify", "600", "-lba", "10"}, code: exitOK,
			out: "verify: 600 blocks of 512 bytes from block 10 written, read back and compared: all match"},
		{name: "verify past the end", args: []string{"nvmf-host", "-p", port, "-nqn", nqn, "-verify", "10", "-lba", "8190"},
			code: exitFail, errOut: "the namespace has 8192 blocks"},
		{name: "verify without CRC", args: []string{"nvmf-host", "-p", port, "-nqn", nqn, "-verify", "64", "-nocrc", "-queues", "1"},
			code: exitOK, out: "all match"},
		{name: "randread", args: []string{"nvmf-host", "-p", port, "-nqn", nqn, "-rw", "randread", "-bs", "4k", "-qd", "4", "-d", "200ms"},
			code: exitOK, out: "read: IOPS="},
		{name: "write", args: []string{"nvmf-host", "-p", port, "-nqn", nqn, "-rw", "write", "-bs", "128k", "-qd", "2", "-d", "200ms"},
			code: exitOK, out: "write: IOPS="},
		{name: "no such namespace", args: []string{"nvmf-host", "-p", port, "-nqn", nqn, "-ns", "9"}, code: exitFail,
			errOut: "namespace 9"},
		{name: "no such subsystem", args: []string{"nvmf-host", "-p", port, "-nqn", "nqn.2024-01.test:none"}, code: exitFail,
			errOut: "connect to"},
		{name: "load of the discovery controller", args: []string{"nvmf-host", "-p", port, "-rw", "read"}, code: exitFail,
			errOut: "discovery controller"},
	})
}
