package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// watchedOutput records a command's output and, if seen is set, closes it
// once ready has been written, so that a test can wait for a server to
// listen.
type watchedOutput struct {
	mu    sync.Mutex
	b     bytes.Buffer
	ready string
	seen  chan struct{}
	once  sync.Once
}

func (w *watchedOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	if w.seen != nil && strings.Contains(w.b.String(), w.ready) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// cliResult is how a command run in the background ended.
type cliResult struct {
	code        int
	out, errOut string
}

// startCLI runs the tool with args in the background and returns once its
// standard output shows ready (a server listening). done receives the
// command's result.
func startCLI(t *testing.T, ready string, args ...string) (out *watchedOutput, done <-chan cliResult) {
	t.Helper()
	out = &watchedOutput{ready: ready, seen: make(chan struct{})}
	var errOut watchedOutput
	ch := make(chan cliResult, 1)
	go func() {
		code := runMain(args, out, &errOut)
		ch <- cliResult{code, out.String(), errOut.String()}
	}()
	select {
	case <-out.seen:
	case r := <-ch:
		t.Fatalf("iwarp %s: exit %d before %q:\n%s%s", strings.Join(args, " "), r.code, ready, r.out, r.errOut)
	case <-time.After(10 * time.Second):
		t.Fatalf("iwarp %s: no %q in 10s", strings.Join(args, " "), ready)
	}
	return out, ch
}

// waitCLI waits for a background command's end.
func waitCLI(t *testing.T, done <-chan cliResult) cliResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the background command did not end")
		return cliResult{}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// startRpingServer runs `iwarp rping -s` with args on a free port and
// returns the port once it listens (-d prints rping's "rdma_listen").
func startRpingServer(t *testing.T, args ...string) (port string, done <-chan cliResult) {
	t.Helper()
	port = freePort(t)
	_, done = startCLI(t, "rdma_listen\n", append([]string{"rping", "-s", "-d", "-p", port}, args...)...)
	return port, done
}

// TestRpingLoopback runs our rping server and client against each other
// as rping's users type them, with rping's defaults and with our MPA
// options: each side prints rping's lines and exits 0.
func TestRpingLoopback(t *testing.T) {
	for _, extra := range [][]string{nil, {"-nocrc"}, {"-nop2p"}, {"-mpa1"}, {"-S", "100"}, {"-S23"}} {
		t.Run(strings.Join(append([]string{"default"}, extra...), ","), func(t *testing.T) {
			port, done := startRpingServer(t, append([]string{"-v"}, extra...)...)
			code, cout, cerr := runCLI(t, append([]string{"rping", "-cvV", "-C5", "-p", port}, extra...)...)
			if code != 0 {
				t.Fatalf("client exited %d: %s", code, cerr)
			}
			s := waitCLI(t, done)
			if s.code != 0 {
				t.Fatalf("server exited %d: %s", s.code, s.errOut)
			}
			if n := strings.Count(cout, "ping data: rdma-ping-"); n != 5 || !strings.HasPrefix(cout, "ping data: rdma-ping-0: ABCDEFG") {
				t.Errorf("client printed %d pings:\n%s", n, cout)
			}
			if !strings.Contains(s.out, "server ping data: rdma-ping-4: EFGH") {
				t.Errorf("server output:\n%s", s.out)
			}
			if cerr != "client DISCONNECT EVENT...\n" || s.errOut != "server DISCONNECT EVENT...\nwait for RDMA_READ_ADV state 10\n" {
				t.Errorf("stderr: client %q, server %q", cerr, s.errOut)
			}
		})
	}
}

// TestRpingDefaultSize: with no -S both sides use rping's 64 bytes: the
// line printed is 63 characters of ping data.
func TestRpingDefaultSize(t *testing.T) {
	port, done := startRpingServer(t)
	code, cout, cerr := runCLI(t, "rping", "-c", "-v", "-C", "1", "-p", port)
	if r := waitCLI(t, done); code != 0 || r.code != 0 {
		t.Fatalf("client %d %s, server %d %s", code, cerr, r.code, r.errOut)
	}
	if want := "ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr\n"; cout != want {
		t.Errorf("client output %q, want %q", cout, want)
	}
}

// TestRpingDebug: -d prints the connection events on both sides.
func TestRpingDebug(t *testing.T) {
	port, done := startRpingServer(t)
	code, cout, cerr := runCLI(t, "rping", "-c", "-d", "-C", "1", "-p", port)
	r := waitCLI(t, done)
	if code != 0 || r.code != 0 {
		t.Fatalf("client %d %s, server %d %s", code, cerr, r.code, r.errOut)
	}
	ev := regexp.MustCompile(`cma_event type (RDMA_CM_EVENT_\w+) cma_id 0x[0-9a-f]+ \((parent|child)\)`)
	for _, c := range []struct{ out, want string }{
		{cout, "ADDR_RESOLVED parent ROUTE_RESOLVED parent ESTABLISHED parent DISCONNECTED parent"},
		{r.out, "CONNECT_REQUEST child ESTABLISHED child DISCONNECTED child"},
	} {
		var got []string
		for _, m := range ev.FindAllStringSubmatch(c.out, -1) {
			got = append(got, strings.TrimPrefix(m[1], "RDMA_CM_EVENT_")+" "+m[2])
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("events %v, want %s:\n%s", got, c.want, c.out)
		}
	}
}

// TestGetoptArgs: rping's getopt spellings become the flag package's; the
// tool's own long flags and anything that is not a bundle stay as they are.
func TestGetoptArgs(t *testing.T) {
	fs := flag.NewFlagSet("rping", flag.ContinueOnError)
	for _, n := range []string{"a", "c", "v", "V", "nocrc", "noext", "timeout"} {
		fs.String(n, "", "")
	}
	for _, c := range []struct{ in, want string }{
		{"-cvV -C3 -S64", "-c -v -V -C 3 -S 64"},
		{"-vVd -a127.0.0.1 -I 10.0.0.1", "-v -V -d -a 127.0.0.1 -I 10.0.0.1"},
		{"-cS 64", "-c -S 64"},
		{"-nocrc -noext -timeout 1s", "-nocrc -noext -timeout 1s"},
		{"-a=h -vx -C -1", "-a=h -vx -C -1"},
		{"-s -- -vV", "-s -- -vV"},
		{"--vV -t3", "--vV -t3"},
	} {
		if got := strings.Join(getoptArgs(fs, rpingOptstring, strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}
