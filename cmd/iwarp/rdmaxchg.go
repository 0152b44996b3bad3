package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/rdmaxchg"
)

// rdma-server and rdma-client speak the protocol of librdmacm's example
// programs rdma_server and rdma_client (internal/rdmaxchg) and take their
// flags: -s ADDRESS and -p PORT (7471). Like them they print "start" and
// "end STATUS" lines; the status is this tool's exit status.

func init() {
	register(&command{name: "rdma-server", short: "server of librdmacm's rdma_server/rdma_client example protocol", run: runRdmaServer})
	register(&command{name: "rdma-client", short: "client of librdmacm's rdma_server/rdma_client example protocol", run: runRdmaClient})
}

// rdmaClientTimeout bounds a client's whole run.
const rdmaClientTimeout = 30 * time.Second

// rdmaFlags parses the flags common to both commands and returns the
// address; ok is false when the command must stop with code.
func rdmaFlags(name, role string, minPort int64, args []string, stdout, stderr io.Writer) (addr string, code int, ok bool) {
	about := fmt.Sprintf(`
The %s of librdmacm's example protocol (rdma-core, librdmacm/examples/
rdma_server.c and rdma_client.c): the client Sends 16 bytes, the server
answers with 16 bytes; each side reports what arrived (this tool's
pattern, or the 16 zero bytes librdmacm's examples send) and ends with
"%s: end 0", as theirs end with "rdma_%s: end 0". -s is their spelling
of -a.

Exit status: 0 the exchange completed, 1 it failed, 2 a bad flag; -h prints
this help and exits 0.`, role, name, role)
	f := newFlags(name, "[-a|-s HOST[:PORT]] [-p PORT]", about, stdout, stderr)
	what := "the server's"
	if role == "server" {
		what = "the local"
	}
	host := f.String("a", defaultHost, what+" `HOST[:PORT]`")
	f.StringVar(host, "s", defaultHost, "`HOST[:PORT]`, the same as -a (librdmacm's spelling)")
	port := f.Int("p", rdmaxchg.DefaultPort, what+" `PORT`")
	if code, ok := f.parse(args); !ok {
		return "", code, false
	}
	if f.NArg() > 0 {
		fmt.Fprintf(stderr, "iwarp %s: unexpected argument %q\n", name, f.Arg(0))
		return "", exitUsage, false
	}
	if !f.checkInt("p", int64(*port), minPort, 65535) {
		return "", exitUsage, false
	}
	addr, err := hostPort(*host, *port, flagSet(f.FlagSet, "p"))
	if err != nil {
		flag := "a"
		if flagSet(f.FlagSet, "s") {
			flag = "s"
		}
		return "", f.badFlag(flag, *host, "%v", err), false
	}
	return addr, exitOK, true
}

// rdmaEnd prints a command's end line and returns its exit status.
func rdmaEnd(name string, err error, stdout, stderr io.Writer) int {
	code := exitOK
	if err != nil {
		fmt.Fprintf(stderr, "iwarp %s: %v\n", name, err)
		code = exitFail
	}
	fmt.Fprintf(stdout, "%s: end %d\n", name, code)
	return code
}

func runRdmaServer(args []string, stdout, stderr io.Writer) int {
	addr, code, ok := rdmaFlags("rdma-server", "server", 0, args, stdout, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintln(stdout, "rdma-server: start")
	ln, err := iwarp.Listen("tcp", addr, nil)
	if err != nil {
		return rdmaEnd("rdma-server", err, stdout, stderr)
	}
	defer ln.Close()
	fmt.Fprintf(stdout, "rdma-server: listening on %v\n", ln.Addr())
	got, peer, err := rdmaxchg.Serve(ctx, ln)
	if got != nil {
		fmt.Fprintf(stdout, "rdma-server: received %s from %v\n", rdmaxchg.Describe(got), peer)
	}
	return rdmaEnd("rdma-server", err, stdout, stderr)
}

func runRdmaClient(args []string, stdout, stderr io.Writer) int {
	addr, code, ok := rdmaFlags("rdma-client", "client", 1, args, stdout, stderr)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), rdmaClientTimeout)
	defer cancel()
	fmt.Fprintln(stdout, "rdma-client: start")
	got, err := rdmaxchg.Dial(ctx, addr)
	if got != nil {
		fmt.Fprintf(stdout, "rdma-client: received %s\n", rdmaxchg.Describe(got))
	}
	return rdmaEnd("rdma-client", err, stdout, stderr)
}
