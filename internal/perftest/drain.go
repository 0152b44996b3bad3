package perftest

import (
	"context"
	"net"
	"sync"
	"time"
)

// drainer keeps the TCP connections the client dials so that it can wait
// until the peer's TCP has acknowledged everything sent. RDMA Writes
// complete when they are handed to TCP; perftest's ib_write_bw then ends
// the test on the other connection, and its server closes the data
// connection at once, so Writes still in the socket buffers (through a
// slow link, e.g. QEMU's emulated network, megabytes of them) would be
// reset on the way. perftest's own client has the same race; ours closes
// it by waiting before it says the test is over.
type drainer struct {
	mu    sync.Mutex
	conns []*net.TCPConn
}

// dial dials with base (or a net.Dialer) and keeps the TCP connection.
func (d *drainer) dial(base func(context.Context, string, string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	if base == nil {
		base = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := base(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok && err == nil {
			d.mu.Lock()
			d.conns = append(d.conns, tc)
			d.mu.Unlock()
		}
		return c, err
	}
}

// wait waits until the last connection dialed has no unacknowledged
// bytes (where the platform tells; elsewhere it returns at once), or ctx
// or limit ends.
func (d *drainer) wait(ctx context.Context, limit time.Duration) {
	d.mu.Lock()
	var c *net.TCPConn
	if len(d.conns) > 0 {
		c = d.conns[len(d.conns)-1]
	}
	d.mu.Unlock()
	if c == nil {
		return
	}
	end := time.Now().Add(limit)
	for time.Now().Before(end) && ctx.Err() == nil {
		n, ok := unackedBytes(c)
		if !ok || n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
