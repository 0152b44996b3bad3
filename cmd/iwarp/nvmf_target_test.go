package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/nvmeof/host"
)

// TestNvmfTargetFlags: bad flags exit 2 having done nothing; a file or
// address it cannot use exits 1; -h exits 0.
func TestNvmfTargetFlags(t *testing.T) {
	busy := heldAddr(t)
	small := filepath.Join(t.TempDir(), "small")
	if err := os.WriteFile(small, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	const nqn = "nqn.2024-01.org.goiwarp:cli"
	runExitCases(t, []exitCase{
		{name: "help", args: []string{"nvmf-target", "-h"}, code: exitOK, out: "usage: iwarp nvmf-target -nqn NQN"},
		{name: "unknown flag", args: []string{"nvmf-target", "-x"}, code: exitUsage},
		{name: "argument", args: []string{"nvmf-target", "-nqn", nqn, "-size", "1m", "x"}, code: exitUsage, errOut: `unexpected argument "x"`},
		{name: "no nqn", args: []string{"nvmf-target", "-size", "1m"}, code: exitUsage, errOut: "-nqn is required"},
		{name: "discovery nqn", args: []string{"nvmf-target", "-nqn", "nqn.2014-08.org.nvmexpress.discovery", "-size", "1m"}, code: exitUsage, errOut: "-nqn nqn.2014-08.org.nvmexpress.discovery:"},
		{name: "neither", args: []string{"nvmf-target", "-nqn", nqn}, code: exitUsage, errOut: "give -file or -size"},
		{name: "both", args: []string{"nvmf-target", "-nqn", nqn, "-size", "1m", "-file", small}, code: exitUsage, errOut: "give -file or -size"},
		{name: "size", args: []string{"nvmf-target", "-nqn", nqn, "-size", "1x"}, code: exitUsage, errOut: "-size 1x: must be a size"},
		{name: "size small", args: []string{"nvmf-target", "-nqn", nqn, "-size", "100"}, code: exitUsage, errOut: "-size 100:"},
		{name: "size huge", args: []string{"nvmf-target", "-nqn", nqn, "-size", "65g"}, code: exitUsage, errOut: "-size 65g:"},
		{name: "bs", args: []string{"nvmf-target", "-nqn", nqn, "-size", "1m", "-bs", "1024"}, code: exitUsage, errOut: "-bs 1024: must be 512 or 4096"},
		{name: "queues", args: []string{"nvmf-target", "-nqn", nqn, "-size", "1m", "-queues", "0"}, code: exitUsage, errOut: "-queues 0:"},
		{name: "port", args: []string{"nvmf-target", "-nqn", nqn, "-size", "1m", "-a", "127.0.0.1:1", "-p", "2"}, code: exitUsage, errOut: "-a 127.0.0.1:1"},
		{name: "no file", args: []string{"nvmf-target", "-nqn", nqn, "-file", filepath.Join(t.TempDir(), "none")}, code: exitFail, errOut: "no such file"},
		{name: "file smaller than a block", args: []string{"nvmf-target", "-nqn", nqn, "-file", small}, code: exitFail, errOut: "less than one 512-byte block"},
		{name: "port in use", args: []string{"nvmf-target", "-nqn", nqn, "-size", "1m", "-a", busy}, code: exitFail, errOut: "address already in use"},
	})
}

func TestNvmfParseTargetSize(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "4k": 4096, "1M": 1 << 20, "2g": 2 << 30} {
		if got, err := parseTargetSize(in); err != nil || got != want {
			t.Errorf("%s: %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "k", "-4k", "0", "4t", "x", "99999999999999999999g"} {
		if _, err := parseTargetSize(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestNvmfTargetServes: the target serves a file until its context ends
// (the interrupt), then exits 0; a host reads what it wrote.
func TestNvmfTargetServes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "disk")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	const nqn = "nqn.2024-01.org.goiwarp:cli-file"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sctx, interrupt := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- nvmfTargetMain(sctx, []string{"-nqn", nqn, "-file", path, "-bs", "4096", "-p", "0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^nvmf-target: serving (\S+) \((\d+) bytes, (\d+)-byte blocks\) on (\S+)\n$`).FindStringSubmatch(line)
	if m == nil || m[1] != nqn || m[2] != "1048576" || m[3] != "4096" {
		t.Fatalf("first line %q", line)
	}
	go io.Copy(io.Discard, pr)
	c, err := host.Connect(ctx, m[4], nqn, &host.Config{IOQueues: 2})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := c.Namespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 8192)
	for i := range data {
		data[i] = byte(i * 13)
	}
	if err := ns.WriteAt(ctx, data, 1); err != nil {
		t.Fatal(err)
	}
	if err := ns.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("host Close: %v", err)
	}
	interrupt()
	select {
	case got := <-code:
		if got != exitOK {
			t.Errorf("exit %d after the interrupt, want 0", got)
		}
	case <-ctx.Done():
		t.Fatal("the target did not exit")
	}
	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(disk[4096:4096+len(data)]) != string(data) {
		t.Error("the file does not hold what the host wrote")
	}
}
