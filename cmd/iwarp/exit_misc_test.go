package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/conform"
)

// heldAddr returns a loopback address a listener holds until the test ends.
func heldAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

func TestDemoExitCodes(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "success", args: []string{"demo", "-max", "0"}, code: exitOK, out: "all 16 operations verified"},
		{name: "cannot listen", args: []string{"demo", "-a", "192.0.2.1"}, code: exitFail, errOut: "iwarp demo: listen tcp 192.0.2.1:0"},
		{name: "-h", args: []string{"demo", "-h"}, code: exitOK, out: "usage: iwarp demo [options]"},
		{name: "help demo", args: []string{"help", "demo"}, code: exitOK, out: "-max size"},
		{name: "unknown flag", args: []string{"demo", "-x"}, code: exitUsage, errOut: "flag provided but not defined: -x"},
		{name: "argument", args: []string{"demo", "x"}, code: exitUsage, errOut: `iwarp demo: unexpected argument "x"`},
		{name: "-max negative", args: []string{"demo", "-max", "-1"}, code: exitUsage, errOut: "iwarp demo: -max -1: must be between 0 and 1073741824"},
		{name: "-max too large", args: []string{"demo", "-max", "2000000000"}, code: exitUsage, errOut: "iwarp demo: -max 2000000000:"},
		{name: "-max malformed", args: []string{"demo", "-max", "1M"}, code: exitUsage, errOut: `invalid value "1M" for flag -max`},
		{name: "-p out of range", args: []string{"demo", "-p", "70000"}, code: exitUsage, errOut: "iwarp demo: -p 70000: must be between 0 and 65535"},
		{name: "-a bad port", args: []string{"demo", "-a", "127.0.0.1:x"}, code: exitUsage, errOut: `iwarp demo: -a 127.0.0.1:x: bad port "x"`},
		{name: "-a and -p disagree", args: []string{"demo", "-a", "127.0.0.1:5", "-p", "6"}, code: exitUsage, errOut: "iwarp demo: -a 127.0.0.1:5: names port 5 but -p says 6"},
	})
}

// TestServeExitCodes: serve serves until interrupted, so only the ways it
// stops at once are here (TestServeBoundedRun runs it).
func TestServeExitCodes(t *testing.T) {
	busy := heldAddr(t)
	runExitCases(t, []exitCase{
		{name: "-h", args: []string{"serve", "-h"}, code: exitOK, out: "usage: iwarp serve [options]"},
		{name: "cannot listen", args: []string{"serve", "-a", "192.0.2.1"}, code: exitFail, errOut: "iwarp serve: listen tcp 192.0.2.1:7174"},
		{name: "port in use", args: []string{"serve", "-a", busy}, code: exitFail, errOut: "address already in use"},
		{name: "-expvar port in use", args: []string{"serve", "-p", "0", "-expvar", busy}, code: exitFail, errOut: "iwarp serve: -expvar: listen tcp " + busy},
		{name: "unknown flag", args: []string{"serve", "-x"}, code: exitUsage, errOut: "flag provided but not defined: -x"},
		{name: "argument", args: []string{"serve", "x"}, code: exitUsage, errOut: `iwarp serve: unexpected argument "x"`},
		{name: "-size negative", args: []string{"serve", "-size", "-1"}, code: exitUsage, errOut: "iwarp serve: -size -1: must be between 1 and 1073741824"},
		{name: "-size 0", args: []string{"serve", "-size", "0"}, code: exitUsage, errOut: "iwarp serve: -size 0:"},
		{name: "-guard negative", args: []string{"serve", "-guard", "-1"}, code: exitUsage, errOut: "iwarp serve: -guard -1: must be between 0 and 1048576"},
		{name: "-n negative", args: []string{"serve", "-n", "-1"}, code: exitUsage, errOut: "iwarp serve: -n -1:"},
		{name: "-p negative", args: []string{"serve", "-p", "-1"}, code: exitUsage, errOut: "iwarp serve: -p -1: must be between 0 and 65535"},
		{name: "-expvar without port", args: []string{"serve", "-expvar", "localhost"}, code: exitUsage, errOut: "iwarp serve: -expvar localhost: want HOST:PORT"},
		{name: "-expvar bad port", args: []string{"serve", "-expvar", ":http-alt"}, code: exitUsage, errOut: `iwarp serve: -expvar :http-alt: port "http-alt" is not a number`},
	})
}

// TestServeBoundedRun: "serve -n 1" serves one connection and exits 0 with
// its canaries intact; its -expvar endpoint serves the Device's counters.
func TestServeBoundedRun(t *testing.T) {
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- runServe([]string{"-p", "0", "-n", "1", "-size", "4096", "-expvar", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	next := func(re *regexp.Regexp) []string {
		t.Helper()
		for lines.Scan() {
			if m := re.FindStringSubmatch(lines.Text()); m != nil {
				return m
			}
		}
		t.Fatalf("serve ended without a line matching %v", re)
		return nil
	}
	addr := next(regexp.MustCompile(`^serve: listening on (\S+);`))[1]
	vars := next(regexp.MustCompile(`^serve: the Device's counters as expvar JSON at (\S+)$`))[1]

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	qp, _, _ := dialServeWriteRead(ctx, t, addr, "bounded")
	resp, err := http.Get(vars)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		IwarpDevice iwarp.DeviceStats `json:"iwarp_device"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || got.IwarpDevice.FPDUsReceived < 2 {
		t.Fatalf("expvar: %+v, %v", got.IwarpDevice, err)
	}
	if err := qp.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	if m := next(regexp.MustCompile(`^serve: \S+: .*; (canaries intact|CANARIES OVERWRITTEN)$`)); m[1] != "canaries intact" {
		t.Fatalf("report: %s", m[0])
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	select {
	case c := <-code:
		if c != exitOK {
			t.Fatalf("serve -n 1 exited %d", c)
		}
	case <-ctx.Done():
		t.Fatal("serve -n 1 did not exit after its connection")
	}
}

func TestConformExitCodes(t *testing.T) {
	const dead = "127.0.0.1:1" // tcpmux: nothing listens there
	runExitCases(t, []exitCase{
		{name: "success", args: []string{"conform", "-run", "Tagged/Write-past-end"}, code: exitOK, out: "CONFORM: 1 passed, 0 failed, 0 skipped"},
		{name: "unreachable", args: []string{"conform", "-a", dead}, code: exitFail, errOut: "iwarp conform: cannot connect to the responder at " + dead},
		{name: "nothing selected", args: []string{"conform", "-run", "nomatch"}, code: exitUsage, errOut: fmt.Sprintf("iwarp conform: -run nomatch: matches none of the %d cases", len(conform.All()))},
		{name: "-h", args: []string{"conform", "-h"}, code: exitOK, out: "-a HOST[:PORT]"},
		{name: "unknown flag", args: []string{"conform", "-x"}, code: exitUsage, errOut: "flag provided but not defined: -x"},
		{name: "argument", args: []string{"conform", "x"}, code: exitUsage, errOut: `iwarp conform: unexpected argument "x"`},
		{name: "bad -run", args: []string{"conform", "-run", "("}, code: exitUsage, errOut: "iwarp conform: -run (: error parsing regexp"},
		{name: "-wait 0", args: []string{"conform", "-wait", "0"}, code: exitUsage, errOut: "iwarp conform: -wait 0s: must be between 1ms and 10m0s"},
		{name: "-startup-wait too long", args: []string{"conform", "-startup-wait", "1h"}, code: exitUsage, errOut: "iwarp conform: -startup-wait 1h0m0s:"},
		{name: "-dial-retry negative", args: []string{"conform", "-dial-retry", "-1s"}, code: exitUsage, errOut: "iwarp conform: -dial-retry -1s: must be between 0s and 10m0s"},
		{name: "-wait malformed", args: []string{"conform", "-wait", "3"}, code: exitUsage, errOut: `invalid value "3" for flag -wait`},
		{name: "-p out of range", args: []string{"conform", "-p", "70000"}, code: exitUsage, errOut: "iwarp conform: -p 70000:"},
		{name: "-a bad port", args: []string{"conform", "-a", "h:x"}, code: exitUsage, errOut: "iwarp conform: -a h:x: bad port"},
	})
}

func TestDecodeExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	text := write("notes.txt", []byte("just some words\n"))
	binary := write("x.bin", []byte{0, 1, 2, 0xff})
	capture := filepath.Join(captureDir, "f_eth0.pcap")
	runExitCases(t, []exitCase{
		{name: "capture", args: []string{"decode", capture}, code: exitOK, out: "MPA Request"},
		{name: "vectors", args: []string{"decode", filepath.Join(vectorDir, "fpdus.tsv")}, code: exitOK},
		{name: "missing file", args: []string{"decode", filepath.Join(dir, "none.pcap")}, code: exitFail, errOut: "no such file"},
		{name: "binary file", args: []string{"decode", binary}, code: exitFail, errOut: "not a pcap or pcapng capture, nor a vector or hex text"},
		{name: "text with nothing to decode", args: []string{"decode", text}, code: exitFail, errOut: "nothing to decode"},
		{name: "one of two files fails", args: []string{"decode", capture, text}, code: exitFail, out: "== " + capture, errOut: text + ": nothing to decode"},
		{name: "-h", args: []string{"decode", "-h"}, code: exitOK, out: "usage: iwarp decode [options] FILE..."},
		{name: "no file", args: []string{"decode"}, code: exitUsage, errOut: "iwarp decode: no FILE given"},
		{name: "unknown flag", args: []string{"decode", "-x", capture}, code: exitUsage, errOut: "flag provided but not defined: -x"},
		{name: "-payload negative", args: []string{"decode", "-payload", "-1", capture}, code: exitUsage, errOut: "iwarp decode: -payload -1: must be between 0 and 65535"},
		{name: "-port 0", args: []string{"decode", "-port", "0", capture}, code: exitUsage, errOut: `"0" is not a port from 1 to 65535`},
		{name: "-port malformed", args: []string{"decode", "-port", "7000,x", capture}, code: exitUsage, errOut: `"x" is not a port`},
	})
}

// TestExpvarTwice: publishing the counters of a second Device (a second run
// of a command in one process) does not panic, and the variable shows the
// newest Device.
func TestExpvarTwice(t *testing.T) {
	for i := range 2 {
		dev := iwarp.NewDevice(nil)
		at, err := serveExpvarAt("127.0.0.1:0", dev)
		if err != nil {
			t.Fatal(err)
		}
		if expvarDevice.Load() != dev {
			t.Fatalf("run %d: the variable shows another Device", i)
		}
		if ta, ok := at.(*net.TCPAddr); !ok || ta.Port == 0 {
			t.Fatalf("run %d: listening on %v", i, at)
		}
	}
}
