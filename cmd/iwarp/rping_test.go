package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// runDialing runs the CLI with args as a client of a server that may not
// listen yet: while the connection is refused it tries again, up to 50
// times. It returns the last exit status and outputs.
func runDialing(args []string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	for i := 0; i < 50; i++ {
		out.Reset()
		errb.Reset()
		code = runMain(args, &out, &errb)
		if code == 0 || !strings.Contains(out.String()+errb.String(), "connection refused") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return code, out.String(), errb.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRpingLoopback runs our rping server and client against each other,
// with validation, as siw's rping would run them.
func TestRpingLoopback(t *testing.T) {
	for _, extra := range [][]string{nil, {"-nocrc"}, {"-nop2p"}, {"-mpa1"}} {
		t.Run(strings.Join(append([]string{"default"}, extra...), ","), func(t *testing.T) {
			port := fmt.Sprint(freePort(t))
			var sout, serr bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- runMain(append([]string{"rping", "-s", "-a", "127.0.0.1", "-p", port, "-v"}, extra...), &sout, &serr)
			}()
			code, cout, cerr := runDialing(append([]string{"rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", "5", "-S", "64", "-v", "-V"}, extra...))
			if code != 0 {
				t.Fatalf("client exited %d: %s", code, cerr)
			}
			select {
			case c := <-done:
				if c != 0 {
					t.Fatalf("server exited %d: %s", c, serr.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("server did not exit after the client disconnected")
			}
			if n := strings.Count(cout, "ping data: rdma-ping-"); n != 5 {
				t.Errorf("client printed %d pings:\n%s", n, cout)
			}
			if !strings.Contains(sout.String(), "server ping data: rdma-ping-4: EFGH") {
				t.Errorf("server output:\n%s", sout.String())
			}
		})
	}
}

// TestRpingPersistentServer: with -P the server serves several clients,
// one after another and two at once, and keeps listening until
// interrupted; each client validates its pings.
func TestRpingPersistentServer(t *testing.T) {
	port := fmt.Sprint(freePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	o := &rpingOpts{server: true, addr: "127.0.0.1", port: mustAtoi(t, port), size: 64, persistent: true, dev: iwarp.NewDevice(nil)}
	var sout, serr bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- rpingServer(ctx, o, &sout, &serr) }()
	client := func() error {
		if code, _, cerr := runDialing([]string{"rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", "3", "-S", "64", "-V"}); code != 0 {
			return fmt.Errorf("client exited %d: %s", code, cerr)
		}
		return nil
	}
	for i := 0; i < 2; i++ {
		if err := client(); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { errs <- client() }()
	}
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("persistent server: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("persistent server did not stop when interrupted")
	}
	if serr.Len() != 0 {
		t.Errorf("server errors: %s", serr.String())
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
