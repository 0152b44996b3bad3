package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"regexp"
	"syscall"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/conform"
)

func init() {
	register(&command{
		name:  "conform",
		short: "the hostile-peer suite against an iWARP responder: per case, what the spec prescribes and what the peer did",
		run:   runConform,
	})
}

func runConform(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("a", "", "responder address host:port (default: an in-process `iwarp serve` on loopback)")
	noCRC := fs.Bool("nocrc", false, "do not ask for MPA CRCs")
	wait := fs.Duration("wait", 3*time.Second, "how long to wait for each answer")
	startupWait := fs.Duration("startup-wait", 12*time.Second, "how long to wait for a responder to give up a stalled startup")
	run := fs.String("run", "", "run only the cases whose name matches this regular expression")
	retry := fs.Duration("dial-retry", 10*time.Second, "keep re-dialling a refused or reset connection this long (a responder restarting between cases)")
	verbose := fs.Bool("v", false, "also print each case's specification reference and the Terminate bytes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var filter *regexp.Regexp
	if *run != "" {
		var err error
		if filter, err = regexp.Compile(*run); err != nil {
			fmt.Fprintf(stderr, "iwarp conform: -run: %v\n", err)
			return 2
		}
	}
	ctx := context.Background()
	target := *addr
	if target == "" {
		stop, a, err := startLocalServer(ctx, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "iwarp conform: %v\n", err)
			return 1
		}
		defer stop()
		target = a
		fmt.Fprintf(stdout, "conform: no -a given: running against an in-process `iwarp serve` at %s\n", target)
	}
	o := &conform.Options{
		Dial:  func(ctx context.Context) (net.Conn, error) { return dialRetry(ctx, target, *retry) },
		NoCRC: *noCRC, Wait: *wait, StartupWait: *startupWait,
	}
	var cases []*conform.Case
	for _, c := range conform.All() {
		if filter == nil || filter.MatchString(c.Name) {
			cases = append(cases, c)
		}
	}
	var pass, fail, skip int
	for _, c := range cases {
		cctx, cancel := context.WithTimeout(ctx, *startupWait+4**wait)
		r := conform.Run(cctx, c, o)
		cancel()
		printResult(stdout, &r, *verbose)
		switch r.Verdict {
		case conform.Pass:
			pass++
		case conform.Fail:
			fail++
		default:
			skip++
		}
	}
	fmt.Fprintf(stdout, "CONFORM: %d passed, %d failed, %d skipped (of %d cases against %s)\n", pass, fail, skip, len(cases), target)
	if fail > 0 {
		return 1
	}
	return 0
}

// dialRetry dials addr, retrying for up to d while the connection is
// refused or reset (a test responder restarting after a hostile case, or a
// port forwarder whose target is not listening yet).
func dialRetry(ctx context.Context, addr string, d time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(d)
	for {
		var nd net.Dialer
		nc, err := nd.DialContext(ctx, "tcp", addr)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil ||
			!(errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)) {
			return nc, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// printResult prints one case: its verdict and name, what the spec
// prescribes and what the responder did.
func printResult(w io.Writer, r *conform.Result, verbose bool) {
	fmt.Fprintf(w, "%-4s %s\n", r.Verdict, r.Case.Name)
	if r.Verdict == conform.Skip {
		fmt.Fprintf(w, "     skipped:    %s\n", r.Reason)
		return
	}
	fmt.Fprintf(w, "     prescribed: %s\n", r.Case.Prescribed())
	fmt.Fprintf(w, "     observed:   %s\n", r.Observed)
	if r.ExpectedTerminate != nil && r.Observed.Kind == conform.ObsTerminate {
		fmt.Fprintf(w, "     bytes:      %s\n", map[bool]string{true: "exactly as RFC 5040 §4.8 builds them", false: "differ from RFC 5040 §4.8's construction"}[r.Exact])
	}
	if verbose {
		fmt.Fprintf(w, "     spec:       %s\n", r.Case.Spec)
		if r.Observed.Kind == conform.ObsTerminate {
			fmt.Fprintf(w, "     received:   % x\n", r.Observed.TerminateULPDU)
			if r.ExpectedTerminate != nil {
				fmt.Fprintf(w, "     expected:   % x\n", r.ExpectedTerminate)
			}
		}
	}
}

// startLocalServer runs `iwarp serve` in this process on a loopback port.
func startLocalServer(ctx context.Context, stderr io.Writer) (stop func(), addr string, err error) {
	s, err := newServer(1<<20, 4096, io.Discard)
	if err != nil {
		return nil, "", err
	}
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", &iwarp.ListenConfig{StartupTimeout: 2 * time.Second})
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			req, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go s.serveOne(ctx, req)
		}
	}()
	return func() {
		cancel()
		ln.Close()
		<-done
		if !s.canariesIntact() {
			fmt.Fprintln(stderr, "iwarp conform: the in-process responder's CANARIES WERE OVERWRITTEN")
		}
	}, ln.Addr().String(), nil
}
