package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/bench"
	"github.com/goiwarp/iwarp/internal/perftest"
)

// perftestConfig is the test the flags ask for: perftest's defaults where
// a flag was not given (ib_write_bw; see perftest.Config.SetDefaults).
func (p *perfFlags) perftestConfig() *perftest.Config {
	cfg := &perftest.Config{Op: perftest.Write, NoCRC: p.noCRC}
	if flagSet(p.FlagSet, "op") {
		cfg.Op, _ = perftest.ParseOp(p.ops) // checked by checkWords
	}
	cfg.Lat = flagSet(p.FlagSet, "mode") && p.mode == "lat"
	if flagSet(p.FlagSet, "size") {
		cfg.Size = p.size
	}
	if flagSet(p.FlagSet, "n") {
		cfg.Iters = p.iters
	}
	if flagSet(p.FlagSet, "q") {
		cfg.TxDepth = p.depth
	}
	cfg.SetDefaults()
	return cfg
}

// runPerftest is "iwarp perf -perftest": our perftest server (-s, or the
// loopback child), our client of a perftest server (-c or HOST), or both
// on loopback.
func (p *perfFlags) runPerftest(ctx context.Context, child bool) int {
	cfg := p.perftestConfig()
	var err error
	switch {
	case p.server || child:
		err = p.perftestServer(ctx, cfg, child)
	case p.client || p.hostGiven:
		var addr string
		if addr, err = p.serverAddr(perftest.DefaultPort); err != nil {
			fmt.Fprintln(p.stderr, "iwarp perf:", err)
			return exitUsage
		}
		err = perftest.Client(ctx, cfg, addr, p.stdout)
	default:
		err = p.perftestLoopback(ctx, cfg)
	}
	if err != nil {
		return p.fail("%v", err)
	}
	return exitOK
}

// perftestServer listens (on -a and -p, default 127.0.0.1:18515) and
// serves one test. As the loopback child it listens on a free loopback
// port, prints it first, and stops when its standard input closes.
func (p *perfFlags) perftestServer(ctx context.Context, cfg *perftest.Config, child bool) error {
	addr := "127.0.0.1:0"
	if !child {
		var err error
		if addr, err = p.serverAddr(perftest.DefaultPort); err != nil {
			return err
		}
	}
	ln, err := iwarp.Listen("tcp", addr, nil)
	if err != nil {
		return err
	}
	defer ln.Close()
	if child {
		var cancel context.CancelFunc
		ctx, cancel = bench.UntilEOF(ctx, os.Stdin)
		defer cancel()
		fmt.Fprintln(p.stdout, ln.Addr())
	} else {
		fmt.Fprintf(p.stdout, "iwarp perf -perftest: %s server on %v, waiting for a perftest client (%s -R -p PORT ... HOST)\n", cfg.Name(), ln.Addr(), cfg.Name())
	}
	return perftest.Serve(ctx, cfg, ln, p.stdout)
}

// perftestLoopback runs our server as a child process on loopback and our
// client here, and prints what the server printed after the client's
// output.
func (p *perfFlags) perftestLoopback(ctx context.Context, cfg *perftest.Config) error {
	cmd, err := perftestChildCmd(cfg)
	if err != nil {
		return err
	}
	var srvOut strings.Builder
	srv, err := bench.StartChild(cmd, &srvOut)
	if err != nil {
		return err
	}
	err = perftest.Client(ctx, cfg, srv.Line, p.stdout)
	if err == nil {
		// The server finishes its side (its checks, its report) on its
		// own; stop only a server that does not.
		select {
		case <-srv.Exited:
		case <-time.After(10 * time.Second):
		}
	}
	serr := srv.Stop()
	fmt.Fprintf(p.stdout, "server side:\n%s", srvOut.String())
	if err == nil && serr != nil {
		err = fmt.Errorf("server: %w", serr)
	}
	return err
}

// perftestChildCmd is this program re-executed as our perftest server for
// cfg on a free loopback port (the child role childPerftestServer).
func perftestChildCmd(cfg *perftest.Config) (*exec.Cmd, error) {
	mode := "bw"
	if cfg.Lat {
		mode = "lat"
	}
	args := []string{"perf", "-perftest", "-op", cfg.Op.String(), "-mode", mode,
		"-size", fmt.Sprint(cfg.Size), "-n", fmt.Sprint(cfg.Iters), "-q", fmt.Sprint(cfg.TxDepth)}
	if cfg.NoCRC {
		args = append(args, "-nocrc")
	}
	return perfChildCmd(childPerftestServer, args...)
}
