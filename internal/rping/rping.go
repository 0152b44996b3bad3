// Package rping speaks the protocol of rping, the RDMA ping-pong test of
// rdma-core (librdmacm/examples/rping.c, release 44.0 as Debian 12 ships it
// in rdmacm-utils, unchanged in this respect up to the current release), on
// this project's verbs API, in both roles, so that `iwarp rping` and Linux
// siw's rping interoperate with their default options.
//
// One ping, as rping.c runs it (every message is a Send of 16 bytes, the
// advertisement {addr, rkey, size}: TO, STag and length, big-endian, which
// is iwarp.RemoteBuffer's encoding):
//
//  1. The client fills its "start" buffer of Options.Size bytes with
//     "rdma-ping-N: " and a rolling run of the characters 'A' to 'z', the
//     last byte 0, and Sends its advertisement (size = Options.Size).
//  2. The server RDMA Reads the advertised length from it into its own
//     buffer of Options.Size bytes and Sends a go-ahead: its send buffer,
//     which rping never fills, so 16 zero bytes.
//  3. The client Sends the advertisement of its "rdma" buffer.
//  4. The server RDMA Writes strlen(buffer)+1 bytes of what it read there
//     and Sends the go-ahead again.
//
// The client repeats Options.Count times (0: until the connection ends)
// and disconnects; the server serves until the client disconnects. Each
// side keeps one receive of 16 bytes posted and reposts it as soon as a
// message arrived.
//
// The package prints what rping prints, where rping prints it: "ping data:"
// lines with Options.Verbose, its error lines on standard error, and with
// Options.Debug the connection events as rdma_cm reports them to rping
// ("cma_event type RDMA_CM_EVENT_... cma_id 0x... (parent|child)") and the
// steps of the ping loop. The events are the ones this stack observes: the
// address and route resolution of a client (a name lookup and a local
// route lookup; iWARP has no path records, so the route is resolved as
// soon as the address is, as rdma_cm does for iWARP), the TCP connection
// and MPA startup (RDMA_CM_EVENT_ESTABLISHED, or the event rdma_cm reports
// for the failure), a connection request and its acceptance on the server,
// and the end of the connection (RDMA_CM_EVENT_DISCONNECTED).
package rping

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/goiwarp/iwarp"
)

// rping's defaults and limits (rping.c).
const (
	// DefaultPort is rping's port.
	DefaultPort = 7174
	// DefaultSize is rping's default ping buffer size (cb->size = 64; its
	// man page says 100, the code says 64).
	DefaultSize = 64
	// MinSize is RPING_MIN_BUFSIZE: sizeof(stringify(INT_MAX)) +
	// sizeof(RPING_MSG_FMT). rping.c does not include <limits.h>, so
	// INT_MAX stays a word and the sum is sizeof("INT_MAX") +
	// sizeof("rdma-ping-%d: ") = 8 + 15 = 23 (rping 44.0: "Invalid size 22
	// (valid range is 23 to 65536)").
	MinSize = 23
	// MaxSize is RPING_BUFSIZE - 1: rping refuses 65536 although its
	// message names it as the top of the range.
	MaxSize = 64*1024 - 1
	// ResolveTimeout is the timeout rping gives rdma_resolve_addr and
	// rdma_resolve_route (2000 ms).
	ResolveTimeout = 2000 * time.Millisecond
	// DefaultTimeout bounds the TCP connection and, separately, the wait
	// for the MPA Reply: Linux siw's initiator waits 10 s for the Reply
	// (MPAREQ_TIMEOUT in siw_cm.h).
	DefaultTimeout = 10 * time.Second
)

// advLen is the size of every message: struct rping_rdma_info.
const advLen = iwarp.RemoteBufferLen

// Options are rping's settings for one client run or one server.
type Options struct {
	// Size is the ping buffer size (-S), MinSize to MaxSize; 0 means
	// DefaultSize.
	Size int
	// Count is the number of pings (-C); 0 pings until the connection
	// ends. The server ignores it, as rping's does.
	Count int
	// Verbose prints the ping data (-v), Validate checks it (-V, client
	// only), Debug prints the connection events and the loop's steps (-d).
	Verbose, Validate, Debug bool
	// Timeout bounds the client's TCP connection and, separately, its wait
	// for the MPA Reply; 0 means DefaultTimeout. The server's wait for a
	// Request is the Listener's (5 s, as siw's).
	Timeout time.Duration
	// Conn are the MPA choices. Conn.Timeout is replaced by Timeout on the
	// client. Conn.Dialer, if set, makes the client's TCP connection
	// (the source address of Dial is then not used).
	Conn iwarp.ConnOptions
	// Device holds every connection's resources; nil opens one.
	Device *iwarp.Device
	// Stdout and Stderr receive rping's output lines; nil discards them.
	Stdout, Stderr io.Writer
}

func (o *Options) size() int {
	if o.Size == 0 {
		return DefaultSize
	}
	return o.Size
}

func (o *Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

// check validates the options.
func (o *Options) check() error {
	if s := o.size(); s < MinSize || s > MaxSize {
		return fmt.Errorf("size %d outside %d..%d", s, MinSize, MaxSize)
	}
	if o.Count < 0 {
		return fmt.Errorf("count %d is negative", o.Count)
	}
	return nil
}

// The states of rping.c's enum test_state, numbered as rping numbers them
// (its messages print the number: "wait for RDMA_READ_ADV state 10").
const (
	stateIdle = iota + 1
	stateConnectRequest
	stateAddrResolved
	stateRouteResolved
	stateConnected
	stateReadAdv
	stateReadComplete
	stateWriteAdv
	stateWriteComplete
	stateDisconnected
	stateError
)

// printer writes rping's lines. Its writers are shared by the connections
// of a persistent server: each line is one Write under a lock.
type printer struct {
	mu       *sync.Mutex
	out, err io.Writer
	debug    bool
}

func newPrinter(o *Options) *printer {
	p := &printer{mu: new(sync.Mutex), out: o.Stdout, err: o.Stderr, debug: o.Debug}
	if p.out == nil {
		p.out = io.Discard
	}
	if p.err == nil {
		p.err = io.Discard
	}
	return p
}

func (p *printer) write(w io.Writer, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = io.WriteString(w, line)
}

// outf prints on standard output, errf on standard error (rping's printf
// and fprintf(stderr)), dbg on standard output with Debug (DEBUG_LOG).
func (p *printer) outf(format string, args ...any) { p.write(p.out, format, args...) }
func (p *printer) errf(format string, args ...any) { p.write(p.err, format, args...) }
func (p *printer) dbg(format string, args ...any) {
	if p.debug {
		p.write(p.out, format, args...)
	}
}

// event prints an rdma_cm event as rping's handler logs it with -d.
func (p *printer) event(name string, id any, parent bool) {
	role := "child"
	if parent {
		role = "parent"
	}
	p.dbg("cma_event type %s cma_id %p (%s)\n", name, id, role)
}

// cstring is the C string at the start of b (up to its first 0 byte).
func cstring(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}
