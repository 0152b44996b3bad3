package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// silentServer listens on loopback, accepts TCP connections and never
// answers them; it returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return l.Addr().String()
}

// TestRpingExitCodes: rping's exit statuses — 0 after the pings, 255 (its
// -1) for a failed run, 22 (EINVAL) for a bad option — and this tool's -h.
// A client whose server is missing or silent fails within its -timeout.
func TestRpingExitCodes(t *testing.T) {
	port, done := startRpingServer(t, "-v")
	runExitCases(t, []exitCase{
		{name: "client -C 3 -V", args: []string{"rping", "-c", "-p", port, "-C", "3", "-V", "-v"}, code: exitOK,
			out: "ping data: rdma-ping-2: CDEF", errOut: "client DISCONNECT EVENT..."},
	})
	if r := waitCLI(t, done); r.code != exitOK || strings.Count(r.out, "server ping data: rdma-ping-") != 3 {
		t.Errorf("server: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	silent, closed := silentServer(t), freePort(t)
	start := time.Now()
	runExitCases(t, []exitCase{
		{name: "closed port", args: []string{"rping", "-c", "-p", closed, "-C", "1", "-timeout", "300ms"}, code: rpingExitFail,
			errOut: "rdma_connect: Connection refused\nconnect error -1\niwarp rping: cannot connect to 127.0.0.1:" + closed},
		{name: "silent server", args: []string{"rping", "-c", "-a", silent, "-C", "1", "-timeout", "300ms"}, code: rpingExitFail,
			errOut: "cma event RDMA_CM_EVENT_UNREACHABLE, error -110\nwait for CONNECTED state 4\nconnect error -1\n" +
				"iwarp rping: timed out after 300ms waiting for the MPA Reply from " + silent + ": the peer accepted"},
		{name: "address in use", args: []string{"rping", "-s", "-a", silent}, code: rpingExitFail,
			errOut: "rdma_bind_addr: Address already in use"},
	})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the failing runs took %v with -timeout 300ms", took)
	}

	runExitCases(t, []exitCase{
		{name: "no role", args: []string{"rping", "-v"}, code: rpingExitUsage, errOut: "give -s (server) or -c (client)"},
		{name: "size too small", args: []string{"rping", "-c", "-S", "22"}, code: rpingExitUsage,
			errOut: "iwarp rping: -S 22: must be between 23 and 65535"},
		{name: "size too large", args: []string{"rping", "-c", "-S65536"}, code: rpingExitUsage, errOut: "-S 65536: must be between"},
		{name: "size not a number", args: []string{"rping", "-c", "-S", "big"}, code: rpingExitUsage, errOut: `invalid value "big" for flag -S`},
		{name: "negative count", args: []string{"rping", "-c", "-C", "-1"}, code: rpingExitUsage, errOut: "-C -1: must be between 0 and"},
		{name: "port out of range", args: []string{"rping", "-s", "-p", "70000"}, code: rpingExitUsage, errOut: "-p 70000: must be between 0 and 65535"},
		{name: "client port 0", args: []string{"rping", "-c", "-p", "0"}, code: rpingExitUsage, errOut: "-p 0: a client needs the server's port"},
		{name: "ports disagree", args: []string{"rping", "-c", "-a", "127.0.0.1:5", "-p", "6"}, code: rpingExitUsage,
			errOut: "-a 127.0.0.1:5: -a 127.0.0.1:5 names port 5 but -p says 6"},
		{name: "timeout", args: []string{"rping", "-c", "-timeout", "0s"}, code: rpingExitUsage, errOut: "-timeout 0s: must be positive"},
		{name: "unknown flag", args: []string{"rping", "-c", "-x"}, code: rpingExitUsage, errOut: "flag provided but not defined: -x"},
		{name: "rping's unhandled -t", args: []string{"rping", "-c", "-t", "3"}, code: rpingExitUsage, errOut: "-t"},
		{name: "argument", args: []string{"rping", "-c", "host"}, code: rpingExitUsage, errOut: `unexpected argument "host"`},
		{name: "-h", args: []string{"rping", "-h"}, code: exitOK, out: "usage: iwarp rping -s|-c [options]"},
		{name: "help rping", args: []string{"help", "rping"}, code: exitOK, out: "-timeout"},
	})
}

// TestRpingUnresolvable: a host that does not resolve ends as rping's
// get_addr ends: its line on standard output, getaddrinfo's code as the
// exit status (254 for EAI_NONAME; 253 or 252 where the resolver cannot
// be reached).
func TestRpingUnresolvable(t *testing.T) {
	code, out, _ := runCLI(t, "rping", "-c", "-a", "nosuch.invalid")
	if code < 252 || code > 254 || !strings.HasPrefix(out, "getaddrinfo failed (") || !strings.HasSuffix(out, ") - invalid hostname or IP address\n") {
		t.Errorf("exit %d, output %q", code, out)
	}
}

// TestRdmaExitCodes: rdma-server and rdma-client exit 0 after the
// exchange, 1 when it fails, 2 for a bad flag.
func TestRdmaExitCodes(t *testing.T) {
	port, done := startRdmaServer(t)
	runExitCases(t, []exitCase{
		{name: "client", args: []string{"rdma-client", "-p", port}, code: exitOK, out: "rdma-client: end 0"},
	})
	if r := waitCLI(t, done); r.code != exitOK {
		t.Errorf("server: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	silent := silentServer(t)
	runExitCases(t, []exitCase{
		{name: "client closed port", args: []string{"rdma-client", "-s", "127.0.0.1", "-p", freePort(t)}, code: exitFail,
			out: "rdma-client: end 1", errOut: "iwarp rdma-client: connecting to 127.0.0.1:"},
		{name: "server address in use", args: []string{"rdma-server", "-a", silent}, code: exitFail, out: "rdma-server: end 1"},
		{name: "server port", args: []string{"rdma-server", "-p", "70000"}, code: exitUsage, errOut: "iwarp rdma-server: -p 70000: must be between 0 and 65535"},
		{name: "client port 0", args: []string{"rdma-client", "-p", "0"}, code: exitUsage, errOut: "iwarp rdma-client: -p 0: must be between 1 and 65535"},
		{name: "ports disagree", args: []string{"rdma-client", "-s", "127.0.0.1:5", "-p", "6"}, code: exitUsage, errOut: "iwarp rdma-client: -s 127.0.0.1:5:"},
		{name: "unknown flag", args: []string{"rdma-server", "-x"}, code: exitUsage, errOut: "flag provided but not defined: -x"},
		{name: "argument", args: []string{"rdma-client", "host"}, code: exitUsage, errOut: `unexpected argument "host"`},
		{name: "server -h", args: []string{"rdma-server", "-h"}, code: exitOK, out: "usage: iwarp rdma-server [-a|-s HOST[:PORT]] [-p PORT]"},
		{name: "client -h", args: []string{"rdma-client", "-h"}, code: exitOK, out: "usage: iwarp rdma-client"},
	})
}

// TestExtcheckExitCodes: extcheck exits 0 on PASS, 1 on FAIL or without a
// peer, 2 for a bad flag.
func TestExtcheckExitCodes(t *testing.T) {
	withoutExt, withExt := rpingResponder(t, true), rpingResponder(t, false)
	runExitCases(t, []exitCase{
		{name: "pass", args: []string{"extcheck", "-a", withoutExt}, code: exitOK, out: "extcheck no-ext: PASS"},
		{name: "peer with extensions", args: []string{"extcheck", "-a", withExt, "-case", "no-ext"}, code: exitFail,
			out: "extcheck no-ext: FAIL: the peer agreed to RFC 7306"},
		{name: "no peer", args: []string{"extcheck", "-p", freePort(t)}, code: exitFail, out: "extcheck no-ext: FAIL: "},
		{name: "case", args: []string{"extcheck", "-case", "nosuch"}, code: exitUsage,
			errOut: "iwarp extcheck: -case nosuch: must be one of no-ext, forced, unknown-stag"},
		{name: "settle", args: []string{"extcheck", "-settle", "-1s"}, code: exitUsage, errOut: "-settle -1s: must be between 0s and 1m0s"},
		{name: "port", args: []string{"extcheck", "-p", "0"}, code: exitUsage, errOut: "-p 0: must be between 1 and 65535"},
		{name: "timeout", args: []string{"extcheck", "-timeout", "0s"}, code: exitUsage, errOut: "-timeout 0s: must be positive"},
		{name: "address", args: []string{"extcheck", "-a", "127.0.0.1:x"}, code: exitUsage, errOut: "-a 127.0.0.1:x: bad port"},
		{name: "argument", args: []string{"extcheck", "x"}, code: exitUsage, errOut: `unexpected argument "x"`},
		{name: "-h", args: []string{"extcheck", "-h"}, code: exitOK, out: "usage: iwarp extcheck"},
	})
}
