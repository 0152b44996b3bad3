package perftest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// Op is the operation a test measures: perftest's ib_write_*, ib_send_*
// or ib_read_*.
type Op uint8

// The operations.
const (
	Write Op = iota + 1
	Send
	Read
)

var opNames = map[Op]string{Write: "write", Send: "send", Read: "read"}

// String is the operation's name, as ParseOp takes it.
func (o Op) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("op%d", uint8(o))
}

// ParseOp parses "write", "send" or "read".
func ParseOp(s string) (Op, error) {
	for o, n := range opNames {
		if n == s {
			return o, nil
		}
	}
	return 0, errors.New("must be write, send or read (perftest's ib_write_*, ib_send_*, ib_read_*)")
}

// DefaultPort is perftest's port.
const DefaultPort = 18515

// MaxSize is the largest message size a test may use.
const MaxSize = 64 << 20

// Config is one perftest-compatible test. Both sides must agree on Op,
// Lat, Size and Iters: perftest does not exchange them.
type Config struct {
	Op      Op   // Write, Send or Read
	Lat     bool // a latency test (ib_*_lat), else bandwidth (ib_*_bw)
	Size    int  // message size in bytes (perftest's -s)
	Iters   int  // iterations (perftest's -n)
	TxDepth int  // bandwidth tests: work requests in flight (perftest's -t)
	NoCRC   bool // do not ask for MPA CRCs
	// Timeout bounds the whole test (perftest's tests are unbounded).
	Timeout time.Duration
	// Dial, if set, makes the client's TCP connections (tests capture
	// them).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// SetDefaults gives the fields left zero perftest's defaults: 65536 bytes
// and 5000 iterations for bandwidth tests, 2 bytes and 1000 iterations for
// latency tests, 128 work requests in flight; and the timeout: two
// minutes plus a millisecond per iteration and a second per MiB moved, far
// beyond any link's pace, so that only a stalled peer meets it.
func (c *Config) SetDefaults() {
	if c.Size == 0 {
		c.Size = 65536
		if c.Lat {
			c.Size = 2
		}
	}
	if c.Iters == 0 {
		c.Iters = 5000
		if c.Lat {
			c.Iters = 1000
		}
	}
	if c.TxDepth == 0 {
		c.TxDepth = 128
	}
	if c.Timeout == 0 {
		c.Timeout = 2*time.Minute + time.Duration(c.Iters)*time.Millisecond + time.Duration(int64(c.Iters)*int64(c.Size)>>20)*time.Second
	}
}

// check reports a configuration no test can run.
func (c *Config) check() error {
	switch {
	case opNames[c.Op] == "":
		return fmt.Errorf("operation %v: %s", c.Op, "must be write, send or read")
	case c.Size < 1 || c.Size > MaxSize:
		return fmt.Errorf("size %d out of range 1..%d", c.Size, MaxSize)
	case c.Iters < 1:
		return fmt.Errorf("%d iterations: must be at least 1", c.Iters)
	case c.TxDepth < 1:
		return fmt.Errorf("%d work requests in flight: must be at least 1", c.TxDepth)
	case c.Timeout <= 0:
		return errors.New("no timeout")
	}
	return nil
}

// Name is perftest's program name for the test, such as ib_write_bw.
func (c *Config) Name() string {
	m := "bw"
	if c.Lat {
		m = "lat"
	}
	return fmt.Sprintf("ib_%v_%s", c.Op, m)
}

// PollsPeerMemory reports whether a side of the test polls memory that
// the peer writes, as perftest does: ib_write_lat, and ib_send_bw's client
// reading its credit once more Sends than the receive depth were sent.
// Go's memory model calls that a data race (the stack places the bytes
// while the application reads them, even through MR.AtomicLoad), so such
// a test cannot run under the race detector.
func (c *Config) PollsPeerMemory() bool {
	return c.Op == Write && c.Lat || c.Op == Send && !c.Lat && c.Iters > rxDepth
}

// The shape of the exchange on the first connection after the four
// parameter messages and the two all-zero records that bracket the data
// connection's setup (as recorded from perftest 4.5 on two siw peers):
// how many QP records precede the test, whether one follows it, and
// whether the client then reports its bandwidth (followed by one more
// record).
func (c *Config) recordsBefore() int {
	if !c.Lat && c.Op != Send {
		return 3
	}
	return 4
}

func (c *Config) recordAfter() bool { return !(c.Lat && c.Op == Write) }

func (c *Config) reports() bool { return !c.Lat && c.Op != Send }

// withDefaults returns a copy of c with perftest's defaults.
func withDefaults(c *Config) *Config {
	d := *c
	d.SetDefaults()
	return &d
}
