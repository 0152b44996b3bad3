package rping

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// side is one end's options and output. The output is read once the side
// has returned (Dial) or sent its result (the servers' done channels).
type side struct {
	o        Options
	out, err bytes.Buffer
}

func newSide(o Options) *side {
	s := &side{o: o}
	s.o.Stdout, s.o.Stderr = &s.out, &s.err
	return s
}

// listen starts a server of srv on a free loopback port; done receives
// Serve's result.
func listen(t *testing.T, srv *side) (netip.AddrPort, <-chan error) {
	t.Helper()
	s, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), &srv.o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := s.Serve(context.Background())
		s.Close()
		done <- err
	}()
	return netip.MustParseAddrPort(s.Addr().String()), done
}

// serverResult waits for a server's result.
func serverResult(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not end after the client left")
		return nil
	}
}

// pingLine is what rping prints for ping n of a size-byte buffer.
func pingLine(n, size int) string {
	buf := make([]byte, size)
	fill(buf, n, byte('A'+n%58))
	return string(cstring(buf))
}

// TestLoopback runs our client against our server with rping's defaults
// and with other sizes and MPA choices: every ping is validated and
// printed on both sides, and both end as rping's do.
func TestLoopback(t *testing.T) {
	for _, c := range []struct {
		name string
		size int
		conn iwarp.ConnOptions
	}{
		{"defaults", 0, iwarp.ConnOptions{}},
		{"min", MinSize, iwarp.ConnOptions{}},
		{"100", 100, iwarp.ConnOptions{}},
		{"4096-nocrc", 4096, iwarp.ConnOptions{DisableCRC: true}},
		{"max-nop2p", MaxSize, iwarp.ConnOptions{Interop: &iwarp.InteropOptions{DisableP2P: true}}},
		{"mpa1", 0, iwarp.ConnOptions{Interop: &iwarp.InteropOptions{MPARevision: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newSide(Options{Size: c.size, Verbose: true, Conn: c.conn})
			addr, done := listen(t, srv)
			cl := newSide(Options{Size: c.size, Count: 5, Verbose: true, Validate: true, Conn: c.conn})
			if err := Dial(context.Background(), addr, netip.Addr{}, &cl.o); err != nil {
				t.Fatalf("client: %v\n%s", err, cl.err.String())
			}
			if err := serverResult(t, done); err != nil {
				t.Fatalf("server: %v\n%s", err, srv.err.String())
			}
			size := cl.o.size()
			var wantC, wantS strings.Builder
			for n := range 5 {
				fmt.Fprintf(&wantC, "ping data: %s\n", pingLine(n, size))
				fmt.Fprintf(&wantS, "server ping data: %s\n", pingLine(n, size))
			}
			if cl.out.String() != wantC.String() {
				t.Errorf("client output:\n%s\nwant:\n%s", cl.out.String(), wantC.String())
			}
			if srv.out.String() != wantS.String() {
				t.Errorf("server output:\n%s\nwant:\n%s", srv.out.String(), wantS.String())
			}
			if got := cl.err.String(); got != "client DISCONNECT EVENT...\n" {
				t.Errorf("client stderr %q", got)
			}
			if got := srv.err.String(); got != "server DISCONNECT EVENT...\nwait for RDMA_READ_ADV state 10\n" {
				t.Errorf("server stderr %q", got)
			}
		})
	}
}

// TestPingData: the ping buffer is rping's, for the first pings, where the
// rolling start wraps from 'z' to 'A', and at the smallest size.
func TestPingData(t *testing.T) {
	for _, c := range []struct {
		ping  int
		first byte
		size  int
		want  string
	}{
		{0, 'A', 64, "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr"},
		{4, 'E', 64, "rdma-ping-4: EFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuv"},
		{57, 'z', 30, "rdma-ping-57: zABCDEFGHIJKLMN"},
		{2147483647, 'A', MinSize, "rdma-ping-2147483647: "},
	} {
		buf := bytes.Repeat([]byte{0xff}, c.size)
		fill(buf, c.ping, c.first)
		if got := string(cstring(buf)); got != c.want || buf[c.size-1] != 0 {
			t.Errorf("ping %d size %d: %q (last byte %#x), want %q", c.ping, c.size, got, buf[c.size-1], c.want)
		}
	}
	// After 58 pings the start character is back at 'A'.
	if got := pingLine(58, 64); !strings.HasPrefix(got, "rdma-ping-58: ABC") {
		t.Errorf("ping 58: %q", got)
	}
}

// TestSizesDiffer: rping's server RDMA Reads the length the client
// advertised, whatever its own size. A client buffer larger than the
// server's fails the server's Read; the server then disconnects in order
// and the client, as rping's, ends with the disconnect (exit status 0).
// A smaller client buffer works.
func TestSizesDiffer(t *testing.T) {
	srv := newSide(Options{Size: 64})
	addr, done := listen(t, srv)
	cl := newSide(Options{Size: 100, Count: 2})
	if err := Dial(context.Background(), addr, netip.Addr{}, &cl.o); err != nil {
		t.Fatalf("client: %v\n%s", err, cl.err.String())
	}
	if err := serverResult(t, done); err == nil {
		t.Fatalf("server: %v", err)
	}
	if want := "post send error 22\nrping server failed: -1\n"; srv.err.String() != want {
		t.Errorf("server stderr %q, want %q", srv.err.String(), want)
	}
	if want := "client DISCONNECT EVENT...\nwait for RDMA_WRITE_ADV state 10\n"; cl.err.String() != want {
		t.Errorf("client stderr %q, want %q", cl.err.String(), want)
	}

	srv = newSide(Options{Size: 100, Verbose: true})
	addr, done = listen(t, srv)
	cl = newSide(Options{Size: 64, Count: 2, Validate: true})
	if err := Dial(context.Background(), addr, netip.Addr{}, &cl.o); err != nil {
		t.Fatalf("client: %v\n%s", err, cl.err.String())
	}
	if err := serverResult(t, done); err != nil {
		t.Fatalf("server: %v", err)
	}
	if !strings.Contains(srv.out.String(), "server ping data: "+pingLine(1, 64)+"\n") {
		t.Errorf("server output:\n%s", srv.out.String())
	}
}

// TestPersistentServer: ServePersistent serves clients one after another
// and two at once until its context ends.
func TestPersistentServer(t *testing.T) {
	srv := newSide(Options{})
	s, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), &srv.o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := netip.MustParseAddrPort(s.Addr().String())
	ctx, cancel := context.WithCancel(context.Background())
	var clientErrs bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- s.ServePersistent(ctx, func(peer net.Addr, err error) { fmt.Fprintf(&clientErrs, "%v: %v\n", peer, err) })
	}()
	client := func() error {
		cl := newSide(Options{Count: 3, Validate: true})
		if err := Dial(context.Background(), addr, netip.Addr{}, &cl.o); err != nil {
			return fmt.Errorf("%w\n%s", err, cl.err.String())
		}
		return nil
	}
	for range 2 {
		if err := client(); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- client() }()
	}
	for range 2 {
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
		t.Fatal("the persistent server did not stop")
	}
	if clientErrs.String() != "" {
		t.Errorf("client errors: %s", clientErrs.String())
	}
	// Each client's end is reported as rping reports it, unless the
	// server was stopped before it saw the end (then nothing is printed);
	// the lines of concurrent clients may interleave.
	count := map[string]int{}
	for _, l := range strings.Split(srv.err.String(), "\n") {
		count[l]++
	}
	delete(count, "")
	if d := count["server DISCONNECT EVENT..."]; len(count) > 2 || d != count["wait for RDMA_READ_ADV state 10"] {
		t.Errorf("server stderr:\n%s", srv.err.String())
	}
}

// TestOptionsChecked: sizes outside rping's range and negative counts are
// refused before anything is done.
func TestOptionsChecked(t *testing.T) {
	for _, o := range []Options{{Size: MinSize - 1}, {Size: MaxSize + 1}, {Count: -1}} {
		if err := Dial(context.Background(), netip.MustParseAddrPort("127.0.0.1:1"), netip.Addr{}, &o); err == nil || strings.Contains(err.Error(), "connect") {
			t.Errorf("Dial with %+v: %v", o, err)
		}
		if _, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), &o); err == nil {
			t.Errorf("Listen with %+v: no error", o)
		}
	}
}
