package fpdu

import (
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/testnet"
)

// memConn is a net.Conn over memory for tests: Read returns the octets of
// in, in pieces whose sizes come from split (nil: as much as asked); Write
// appends to out.
type memConn struct {
	in    []byte
	split func(max int) int
	out   []byte
}

func (c *memConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.in))
	if c.split != nil {
		n = min(n, c.split(n))
	}
	copy(p, c.in[:n])
	c.in = c.in[n:]
	return n, nil
}

func (c *memConn) Write(p []byte) (int, error) {
	c.out = append(c.out, p...)
	return len(p), nil
}

func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// randomSplit returns a split function giving random read sizes from 1 to
// max, mostly small, from a seeded generator.
func randomSplit(seed uint64) func(int) int {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(max int) int {
		switch r.IntN(4) {
		case 0:
			return 1
		case 1:
			return 1 + r.IntN(min(max, 16))
		case 2:
			return 1 + r.IntN(min(max, 700))
		}
		return max
	}
}

// splitFromBytes returns a split function driven by fuzz input octets.
func splitFromBytes(b []byte) func(int) int {
	i := 0
	return func(max int) int {
		if len(b) == 0 {
			return max
		}
		v := int(b[i%len(b)])
		i++
		if v == 0 {
			return max
		}
		return min(max, v)
	}
}

// tcpPair returns the two ends of a loopback TCP connection with
// TCP_NODELAY (Go's default).
func tcpPair(t testing.TB) (a, b *net.TCPConn) {
	return testnet.TCPPair(t)
}

// deadline bounds blocking socket calls in tests.
func deadline(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
}

// stuckConn returns no octets and no error, forever.
type stuckConn struct{ memConn }

func (*stuckConn) Read([]byte) (int, error) { return 0, nil }
