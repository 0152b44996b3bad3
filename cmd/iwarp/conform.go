package main

import (
	"context"
	"errors"
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

const conformAbout = `Runs the hostile-peer suite (docs/security.md) against an
iWARP responder: each case on its own connection, a malformed or abusive
input with the outcome the specifications prescribe. Per case it prints the
verdict (PASS, FAIL, SKIP with the reason), what is prescribed and what the
responder did, then "CONFORM: n passed, m failed, k skipped". Without -a
and -p it runs against an in-process "iwarp serve" on loopback. Exits 1 if
a case failed or the responder cannot be reached (the run stops at the
first connection that cannot be made), 2 if -run selects no case.`

// conformMaxWait bounds the duration flags.
const conformMaxWait = 10 * time.Minute

func runConform(args []string, stdout, stderr io.Writer) int {
	f := newFlags("conform", "[options]", conformAbout, stdout, stderr)
	addr := f.String("a", "", "responder's `HOST[:PORT]` (default: an in-process iwarp serve on loopback)")
	port := f.Int("p", 7174, "responder's `PORT` when -a names none")
	noCRC := f.Bool("nocrc", false, "do not ask for MPA CRCs")
	wait := f.Duration("wait", 3*time.Second, "how long to wait for each answer")
	startupWait := f.Duration("startup-wait", 12*time.Second, "how long to wait for a responder to give up a stalled startup")
	run := f.String("run", "", "run only the cases whose name matches this `regexp`")
	retry := f.Duration("dial-retry", 0, "keep re-dialling a refused or reset connection this long (a responder that restarts between cases, or a port forwarder whose target is not listening yet); 0: a refused connection ends the run at once")
	verbose := f.Bool("v", false, "also print each case's specification reference and the Terminate bytes")
	if code, ok := f.parse(args); !ok {
		return code
	}
	if !noArgs(f) || !checkDuration(f, "wait", *wait, time.Millisecond, conformMaxWait) ||
		!checkDuration(f, "startup-wait", *startupWait, time.Millisecond, conformMaxWait) ||
		!checkDuration(f, "dial-retry", *retry, 0, conformMaxWait) {
		return exitUsage
	}
	target := ""
	if *addr != "" || flagSet(f.FlagSet, "p") {
		var ok bool
		if target, ok = addrFromFlags(f, *addr, *port); !ok {
			return exitUsage
		}
	}
	cases, ok := selectCases(f, *run)
	if !ok {
		return exitUsage
	}
	ctx := context.Background()
	if target == "" {
		stop, a, err := startLocalServer(ctx, stderr)
		if err != nil {
			return f.fail("%v", err)
		}
		defer stop()
		target = a
		fmt.Fprintf(stdout, "conform: no -a given: running against an in-process iwarp serve at %s\n", target)
	}
	o := &conform.Options{
		Dial:  func(ctx context.Context) (net.Conn, error) { return dialRetry(ctx, target, *retry) },
		NoCRC: *noCRC, Wait: *wait, StartupWait: *startupWait,
	}
	var pass, fail, skip int
	for i, c := range cases {
		cctx, cancel := context.WithTimeout(ctx, *startupWait+4**wait)
		r := conform.Run(cctx, c, o)
		cancel()
		if r.DialErr != nil {
			if i > 0 {
				fmt.Fprintf(stdout, "CONFORM: %d passed, %d failed, %d skipped; stopped before case %d of %d (%s)\n", pass, fail, skip, i+1, len(cases), c.Name)
			}
			return f.fail("cannot connect to the responder at %s: %v", target, r.DialErr)
		}
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
		return exitFail
	}
	return exitOK
}

// selectCases returns the cases whose name matches pattern (every case
// when it is empty); a bad pattern, or one that matches nothing, is
// reported as -run's error and ok is false.
func selectCases(f *cmdFlags, pattern string) (cases []*conform.Case, ok bool) {
	all := conform.All()
	if pattern == "" {
		return all, true
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		f.badFlag("run", pattern, "%v", err)
		return nil, false
	}
	for _, c := range all {
		if re.MatchString(c.Name) {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		f.badFlag("run", pattern, "matches none of the %d cases", len(all))
		return nil, false
	}
	return cases, true
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
