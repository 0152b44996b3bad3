//go:build linux && !iwarp_portable

package poll

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"
)

// msgSize is a ping-pong message: about a small RDMA Read Request's FPDU.
const msgSize = 48

// echoGoroutine answers every message on c from a goroutine of its own,
// with blocking Read and Write: what a receive goroutine per connection
// does. It returns when c is closed.
func echoGoroutine(c net.Conn) {
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
}

// echoReady answers every message on c from Ready: it reads until the
// socket is empty, answers each read with a non-blocking Write, and arms
// again; what the shell's poller path does. Errors go to fail.
func echoReady(tb testing.TB, p *Poller, c *net.TCPConn, fail chan<- error) {
	var h *Handle
	buf := make([]byte, 4096)
	h = register(tb, p, c, readyFunc(func() {
		for {
			n, err := h.Read(buf)
			if errors.Is(err, ErrWouldBlock) {
				break
			}
			if err != nil {
				return // the end of the test: no Arm
			}
			if w, err := h.Write(buf[:n]); w != n {
				fail <- fmt.Errorf("the answer did not fit: %d of %d octets, %v", w, n, err)
				return
			}
			if n < len(buf) {
				break // the socket was empty: Arm looks again
			}
		}
		if err := h.Arm(); err != nil {
			fail <- err
		}
	}))
	arm(tb, h)
}

// pingPong makes rounds round trips of msgSize octets on c, appending each
// one's duration to lat.
func pingPong(tb testing.TB, c net.Conn, rounds int, lat []time.Duration) []time.Duration {
	lat, err := pingPongErr(c, rounds, lat)
	if err != nil {
		tb.Fatal(err)
	}
	return lat
}

// pingPongErr is pingPong for any goroutine: it returns its error.
func pingPongErr(c net.Conn, rounds int, lat []time.Duration) ([]time.Duration, error) {
	msg, reply := make([]byte, msgSize), make([]byte, msgSize)
	c.SetReadDeadline(time.Now().Add(bound))
	for range rounds {
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			return lat, err
		}
		if _, err := io.ReadFull(c, reply); err != nil {
			return lat, fmt.Errorf("no answer (a lost wake-up?): %w", err)
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

// stats is the median, the 99th percentile, the maximum and how many round
// trips took 5 ms or more.
type stats struct {
	p50, p99, max time.Duration
	slow          int
}

func summarise(lat []time.Duration) stats {
	s := slices.Clone(lat)
	slices.Sort(s)
	st := stats{p50: s[len(s)/2], p99: s[len(s)*99/100], max: s[len(s)-1]}
	for _, d := range s {
		if d >= 5*time.Millisecond {
			st.slow++
		}
	}
	return st
}

func (s stats) String() string {
	return fmt.Sprintf("median %v, p99 %v, max %v, %d at 5 ms or more", s.p50, s.p99, s.max, s.slow)
}

// The number the rebuild lives by: a connection answered from Ready costs
// about what one answered by a goroutine of its own does, and no round
// trip waits for a timer. The two are measured in alternating blocks on
// two connections, so that the machine's drift falls on both.
func TestLatencyReadyAgainstGoroutine(t *testing.T) {
	blocks, perBlock := 10, 2000
	if testing.Short() || raceEnabled {
		blocks, perBlock = 2, 200
	}
	p := newPoller(t)
	d := newDialer(t)
	gLocal, gPeer := d.pair()
	rLocal, rPeer := d.pair()
	echoGoroutine(gLocal)
	fail := make(chan error, 1)
	echoReady(t, p, rLocal, fail)

	pingPong(t, gPeer, perBlock/4, nil) // warm up
	pingPong(t, rPeer, perBlock/4, nil)
	var byGoroutine, byReady []time.Duration
	for range blocks {
		byGoroutine = pingPong(t, gPeer, perBlock, byGoroutine)
		byReady = pingPong(t, rPeer, perBlock, byReady)
	}
	select {
	case err := <-fail:
		t.Fatal(err)
	default:
	}
	g, r := summarise(byGoroutine), summarise(byReady)
	t.Logf("%d round trips of %d octets each way", len(byReady), msgSize)
	t.Logf("goroutine: %v", g)
	t.Logf("Ready:     %v", r)
	t.Logf("Ready/goroutine: median %.2f, p99 %.2f", float64(r.p50)/float64(g.p50), float64(r.p99)/float64(g.p99))
	if testing.Short() || raceEnabled {
		return // too few, or too slow, to compare
	}
	if float64(r.p50) > 1.25*float64(g.p50) {
		t.Errorf("Ready's median round trip %v against a goroutine's %v: more than 25 %% slower", r.p50, g.p50)
	}
	// A missed wake-up that something else repairs (the runtime polls the
	// network every 10 ms at the latest) shows as round trips of
	// milliseconds; the machine's own hiccups hit both paths alike.
	if r.slow > g.slow+len(byReady)/1000 {
		t.Errorf("%d of Ready's round trips took 5 ms or more, %d of the goroutine's", r.slow, g.slow)
	}
}

// BenchmarkPingPong is one connection's round trip answered by a goroutine
// or from Ready; besides ns/op (the mean) it reports the median and the
// 99th percentile.
func BenchmarkPingPong(b *testing.B) {
	for _, mode := range []string{"goroutine", "ready"} {
		b.Run(mode, func(b *testing.B) {
			local, peer := tcpPair(b)
			fail := make(chan error, 1)
			if mode == "goroutine" {
				echoGoroutine(local)
			} else {
				echoReady(b, newPoller(b), local, fail)
			}
			pingPong(b, peer, 500, nil)
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			lat = pingPong(b, peer, b.N, lat)
			b.StopTimer()
			select {
			case err := <-fail:
				b.Fatal(err)
			default:
			}
			s := summarise(lat)
			b.ReportMetric(float64(s.p50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(s.p99.Nanoseconds()), "p99-ns")
		})
	}
}

// Many connections answered from Ready at once, so that sockets become
// ready while the Poller's goroutine is busy with others: every round trip
// is answered (a lost wake-up fails the client's read deadline).
func TestManyConnectionsAnsweredFromReady(t *testing.T) {
	conns, rounds := 64, 300
	if testing.Short() || raceEnabled {
		rounds = 50
	}
	p := newPoller(t)
	d := newDialer(t)
	fail := make(chan error, conns)
	results := make(chan []time.Duration, conns)
	for range conns {
		local, peer := d.pair()
		echoReady(t, p, local, fail)
		go func() {
			lat, err := pingPongErr(peer, rounds, nil)
			if err != nil {
				fail <- err
			}
			results <- lat
		}()
	}
	var all []time.Duration
	for range conns {
		select {
		case lat := <-results:
			all = append(all, lat...)
		case err := <-fail:
			t.Fatal(err)
		}
	}
	if len(all) != conns*rounds {
		t.Fatalf("%d round trips answered, want %d", len(all), conns*rounds)
	}
	t.Logf("%d connections, %d round trips each: %v", conns, rounds, summarise(all))
}
