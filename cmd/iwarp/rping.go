package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/rping"
)

func init() {
	register(&command{
		name:  "rping",
		short: "rping client or server, wire-compatible with rdmacm-utils' rping",
		run:   runRping,
	})
}

// rping's exit statuses, which it documents by returning them from main
// (cli.go: a mirrored tool keeps its codes): EINVAL for a bad option, -1 for
// a run that failed; a host that does not resolve exits with getaddrinfo's
// code (rping.AddrError).
const (
	rpingExitUsage = 22  // EINVAL
	rpingExitFail  = 255 // -1
)

// rpingOptstring is rping.c's getopt string, less "t:" (listed there but
// not handled: rping 44.0 answers -t with its usage).
const rpingOptstring = "a:I:Pp:C:S:scvVdq"

const rpingAbout = `
rdmacm-utils' rping (rdma-core, librdmacm/examples/rping.c) in either role,
on the wire and in its output: the client advertises a buffer of -S bytes
("rdma-ping-N: " and a rolling run of letters), the server RDMA Reads it and
RDMA Writes it back into the client's second buffer. With -v each side
prints the ping data, with -d the connection events. rping's single-letter
options may be bundled as its getopt allows (-vVd, -S64, -C3).

Exit status as rping's: 0 when the pings ran (or the peer disconnected in
order), 22 for a bad option, 255 for a failed run, 254 (253, 252) for a host
that does not resolve; -h prints this help and exits 0.`

// rpingRole is -s or -c: the last one given wins, as with rping's getopt.
type rpingRole struct {
	role *string
	name string
}

func (r rpingRole) String() string   { return "false" }
func (r rpingRole) IsBoolFlag() bool { return true }
func (r rpingRole) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err == nil && on {
		*r.role = r.name
	}
	return err
}

func runRping(args []string, stdout, stderr io.Writer) int {
	f := newFlags("rping", "-s|-c [options]", rpingAbout, stdout, stderr)
	var role string
	f.Var(rpingRole{&role, "s"}, "s", "server side")
	f.Var(rpingRole{&role, "c"}, "c", "client side")
	addr := f.String("a", defaultHost, "client: the server's `HOST[:PORT]`; server: the address to listen on (rping's listens on any address by default: give -a 0.0.0.0 or -a ::0)")
	source := f.String("I", "", "client: source `ADDR`ess to bind to")
	port := f.Int("p", rping.DefaultPort, "the server's `PORT`")
	count := f.Int("C", 0, "ping `COUNT` (0: until the connection ends; the server serves until the client leaves, as rping's)")
	size := f.Int("S", rping.DefaultSize, fmt.Sprintf("ping buffer `SIZE` in bytes, \"rdma-ping-N: \" included, %d to %d", rping.MinSize, rping.MaxSize))
	verbose := f.Bool("v", false, "display the ping data")
	validate := f.Bool("V", false, "client: validate the ping data")
	debug := f.Bool("d", false, "debug: print the connection events and the ping loop's steps")
	persistent := f.Bool("P", false, "persistent server: serve any number of clients, concurrently, until interrupted")
	f.Bool("q", false, "accepted for compatibility (rping: create and move the QP itself); this tool's QPs always are, nothing changes on the wire")
	timeout := f.Duration("timeout", rping.DefaultTimeout, "client: bound `D` on the TCP connection and, separately, on the wait for the MPA Reply (Linux siw's initiator waits 10s)")
	expvarAddr := f.String("expvar", "", "serve the Device's counters as expvar JSON on this `ADDR`ess (/debug/vars)")
	noCRC := f.Bool("nocrc", false, "do not ask for MPA CRCs")
	rev1 := f.Bool("mpa1", false, "use MPA revision 1")
	noP2P := f.Bool("nop2p", false, "do not use RFC 6581 peer-to-peer mode")
	noExt := f.Bool("noext", false, "offer no RDMAP extension (behave like a peer without RFC 7306 and V2)")
	if code, ok := f.parse(getoptArgs(f.FlagSet, rpingOptstring, args)); !ok {
		if code == exitUsage {
			return rpingExitUsage
		}
		return code
	}
	switch {
	case f.NArg() > 0:
		fmt.Fprintf(stderr, "iwarp rping: unexpected argument %q\n", f.Arg(0))
		return rpingExitUsage
	case role == "":
		fmt.Fprintln(stderr, "iwarp rping: give -s (server) or -c (client)")
		f.usage(stderr)
		return rpingExitUsage
	case !f.checkInt("S", int64(*size), rping.MinSize, rping.MaxSize),
		!f.checkInt("C", int64(*count), 0, math.MaxInt32),
		!f.checkInt("p", int64(*port), 0, 65535):
		return rpingExitUsage
	case *timeout <= 0:
		f.badFlag("timeout", *timeout, "must be positive")
		return rpingExitUsage
	}
	hp, err := hostPort(*addr, *port, flagSet(f.FlagSet, "p"))
	if err != nil {
		f.badFlag("a", *addr, "%v", err)
		return rpingExitUsage
	}
	host, portText, _ := net.SplitHostPort(hp)
	portNum, _ := strconv.Atoi(portText)
	if role == "c" && portNum == 0 {
		f.badFlag("p", 0, "a client needs the server's port")
		return rpingExitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// rping resolves -a and -I while it reads its options (get_addr).
	ip, code := rpingResolve(ctx, host, stdout)
	if code != exitOK {
		return code
	}
	var src netip.Addr
	if *source != "" {
		if src, code = rpingResolve(ctx, *source, stdout); code != exitOK {
			return code
		}
	}
	o := rping.Options{Size: *size, Count: *count, Verbose: *verbose, Validate: *validate, Debug: *debug,
		Timeout: *timeout, Device: iwarp.NewDevice(nil), Stdout: stdout, Stderr: stderr}
	o.Conn.DisableCRC = *noCRC
	o.Conn.Interop = &iwarp.InteropOptions{DisableP2P: *noP2P, HideExtensions: *noExt}
	if *rev1 {
		o.Conn.Interop.MPARevision = 1
	}
	if *expvarAddr != "" {
		if err := serveExpvar(*expvarAddr, o.Device); err != nil {
			fmt.Fprintf(stderr, "iwarp rping: %v\n", err)
			return rpingExitFail
		}
	}
	dst := netip.AddrPortFrom(ip, uint16(portNum))
	if role == "c" {
		err = rping.Dial(ctx, dst, src, &o)
	} else {
		err = rpingServe(ctx, dst, &o, *persistent, stderr)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted")
		}
		fmt.Fprintf(stderr, "iwarp rping: %v\n", err)
		return rpingExitFail
	}
	return exitOK
}

// rpingResolve resolves a host as rping's get_addr does: on failure it
// prints rping's line on standard output and returns rping's status.
func rpingResolve(ctx context.Context, host string, stdout io.Writer) (netip.Addr, int) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ip, err := rping.Resolve(rctx, host)
	var ae *rping.AddrError
	if errors.As(err, &ae) {
		fmt.Fprintln(stdout, ae.Error())
		return ip, ae.ExitStatus()
	}
	return ip, exitOK
}

// rpingServe listens on addr and serves one client, or with persistent
// every client until interrupted.
func rpingServe(ctx context.Context, addr netip.AddrPort, o *rping.Options, persistent bool, stderr io.Writer) error {
	s, err := rping.Listen(addr, o)
	if err != nil {
		return err
	}
	defer s.Close()
	if !persistent {
		return s.Serve(ctx)
	}
	return s.ServePersistent(ctx, func(peer net.Addr, err error) {
		fmt.Fprintf(stderr, "iwarp rping: client %v: %v\n", peer, err)
	})
}
