package iwarp_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/mpa"
)

// What a connection costs the process at each stage of its life at a
// Listener (docs/security.md, "What a connection costs"). Each kind opens
// n connections in one state, client ends in this process too, and
// measures the growth of the heap (live objects after a collection), the
// goroutine stacks and the resident set, per connection. "tcp" is the
// control: the same sockets, both ends, held without a Listener.

// costKind puts n connections into one state and returns what closes them.
type costKind struct {
	name string
	open func(t testing.TB, n int) (closeAll func())
}

// connCost is a kind's growth per connection, in bytes.
type connCost struct {
	heap, stacks, rss float64
}

func (c connCost) String() string {
	return strconv.FormatFloat(c.heap/1024, 'f', 1, 64) + " KiB heap, " +
		strconv.FormatFloat(c.stacks/1024, 'f', 1, 64) + " KiB stacks, " +
		strconv.FormatFloat(c.rss/1024, 'f', 1, 64) + " KiB resident"
}

var costKinds = []costKind{
	{"tcp", openTCP},
	{"application-QP", openQPs},
	{"silent", openSilent},
	{"awaiting-RTR", openAwaitingRTR},
	{"established-idle", openEstablished},
}

// TestListenerCostPerConnection: a connection in startup costs the
// process a few KiB beyond its socket, whatever the stage: in particular
// the wait for the RTR holds no receive buffer (it held a 64 KiB one),
// where internal/mpa waits for the socket's readability (Linux).
func TestListenerCostPerConnection(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what goroutines and allocations cost")
	}
	const n = 400
	const bound = 16 << 10 // heap and stacks per connection, beyond its sockets and its QP
	var costs [4]connCost
	for i, k := range costKinds[:4] {
		costs[i] = measureCost(t, k, n)
		t.Logf("%s: %v", k.name, costs[i])
	}
	sum := func(c connCost) float64 { return c.heap + c.stacks }
	for _, c := range []struct {
		name  string
		extra float64
	}{
		{"silent", sum(costs[2]) - sum(costs[0])},
		{"awaiting-RTR", sum(costs[3]) - sum(costs[0]) - sum(costs[1])},
	} {
		if c.name == "awaiting-RTR" && !mpa.CanPeek {
			t.Logf("%s: not bounded here: without the Linux poller path the wait for the RTR holds the 64 KiB staging buffer (%.1f KiB)", c.name, c.extra/1024)
			continue
		}
		t.Logf("%s: %.1f KiB heap and stacks beyond the sockets and the application's QP", c.name, c.extra/1024)
		if c.extra > bound {
			t.Errorf("%s: %.1f KiB of heap and stacks per connection beyond its sockets and QP, bound %d KiB", c.name, c.extra/1024, bound>>10)
		}
	}
}

// BenchmarkListenerCostPerConnection reports every kind's cost per
// connection (1,000 connections each; run with -benchtime 1x).
func BenchmarkListenerCostPerConnection(b *testing.B) {
	for _, k := range costKinds {
		b.Run(k.name, func(b *testing.B) {
			var c connCost
			for range b.N {
				c = measureCost(b, k, 1000)
			}
			b.ReportMetric(c.heap, "heap-B/conn")
			b.ReportMetric(c.stacks, "stack-B/conn")
			b.ReportMetric(c.rss, "rss-B/conn")
		})
	}
}

// measureCost opens n connections of kind k and returns the growth per
// connection, each figure taken after a garbage collection that also
// returned free memory to the system.
func measureCost(t testing.TB, k costKind, n int) connCost {
	before := settledMemory()
	closeAll := k.open(t, n)
	after := settledMemory()
	closeAll()
	per := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) }
	return connCost{heap: per(before[0], after[0]), stacks: per(before[1], after[1]), rss: per(before[2], after[2])}
}

// settledMemory collects garbage, returns free memory to the system, and
// reads the live heap, the goroutine stacks and the resident set.
func settledMemory() [3]uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return [3]uint64{s[0].Value.Uint64(), s[1].Value.Uint64(), residentBytes("self")}
}

// residentBytes returns the resident set size of process pid ("self":
// this one) from /proc (Linux), or 0.
func residentBytes(pid string) uint64 {
	b, err := os.ReadFile("/proc/" + pid + "/statm")
	var size, resident uint64
	if err != nil {
		return 0
	}
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return resident * uint64(os.Getpagesize())
}

// hiddenTCP hides a *net.TCPListener's type, so that NewListener does not
// set TCP_DEFER_ACCEPT on it: connections that send nothing reach the
// Listener at once.
type hiddenTCP struct{ net.Listener }

// dialN dials n connections to addr.
func dialN(t testing.TB, addr string, n int) []net.Conn {
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

func closeConns(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// openTCP: n loopback connections, both ends held, nothing running.
func openTCP(t testing.TB, n int) func() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := dialN(t, ln.Addr().String(), n)
	for range n {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return func() { closeConns(conns); ln.Close() }
}

// openQPs: n QPs as the acceptor makes them (each with its CQ), not
// connected: what the application spends on each request it accepts.
func openQPs(t testing.TB, n int) func() {
	a := newAcceptor(t)
	for range n {
		if _, err := a.qp(); err != nil {
			t.Fatal(err)
		}
	}
	return a.close
}

// openSilent: n connections that sent nothing, in startup at a Listener
// (without TCP_DEFER_ACCEPT, which would keep them in the kernel).
func openSilent(t testing.TB, n int) func() {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	io0 := ioWaiting()
	ln := iwarp.NewListener(hiddenTCP{raw}, &iwarp.ListenConfig{MaxPending: 2 * n, MaxConnections: -1, StartupTimeout: time.Minute})
	conns := dialN(t, raw.Addr().String(), n)
	waitIO(t, io0+1+n) // the accept loop and a startup per connection
	return func() { closeConns(conns); ln.Close() }
}

// openAwaitingRTR: n connections that sent a Request and read the Reply,
// each in an application's ConnRequest.Accept waiting for the RTR (the
// application's QP counted).
func openAwaitingRTR(t testing.TB, n int) func() {
	io0 := ioWaiting()
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", &iwarp.ListenConfig{MaxPending: 2 * n, MaxConnections: -1, StartupTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := newAcceptor(t)
	a.serve(ctx, ln, nil)
	conns := dialN(t, ln.Addr().String(), n)
	req := requestBytes()
	for _, c := range conns {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		if err := readReply(c); err != nil {
			t.Fatal(err)
		}
	}
	waitIO(t, io0+1+n) // the accept loop and an Accept per connection
	return func() { closeConns(conns); ln.Close(); cancel(); a.close() }
}

// openEstablished: n idle connections in StateRTS at the server (the
// application's QPs); the clients are bare MPA connections, without QPs.
// (Whether a QP keeps a goroutine waiting for the network is the engine's
// business, so nothing waits for one.)
func openEstablished(t testing.TB, n int) func() {
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", &iwarp.ListenConfig{MaxConnections: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := newAcceptor(t)
	a.serve(ctx, ln, nil)
	clients := make([]*mpa.Conn, 0, n)
	for range n {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c, err := mpa.Connect(ctx, nc, mpa.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	if !a.waitFor(ctx, func() bool { return a.live.Load() == int64(n) }) {
		t.Fatalf("%d of %d connections in RTS", a.live.Load(), n)
	}
	return func() {
		for _, c := range clients {
			c.Close()
		}
		ln.Close()
		cancel()
		a.close()
	}
}

// waitIO waits until n goroutines wait for the network: those that serve
// the connections have run as far as they will while idle.
func waitIO(t testing.TB, n int) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := ioWaiting()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines wait for the network, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// ioWaiting returns how many goroutines wait for the network.
func ioWaiting() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "[IO wait")
}
