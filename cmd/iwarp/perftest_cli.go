package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/goiwarp/iwarp"
)

// perftestArgs are the "iwarp perf" flags that matter with -perftest.
type perftestArgs struct {
	server, child bool
	addr, client  string
	op, mode      string
	size, iters   int
	depth         int
	noCRC         bool
	set           map[string]bool // flags given on the command line
}

// setFlags returns the names of the flags set on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	m := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m[f.Name] = true })
	return m
}

// runPerftest is "iwarp perf -perftest".
func runPerftest(ctx context.Context, a perftestArgs, stdout, stderr io.Writer) int {
	cfg, err := a.config()
	if err != nil {
		fmt.Fprintln(stderr, "iwarp perf -perftest:", err)
		return 2
	}
	switch {
	case a.server || a.child:
		err = ptServerMain(ctx, cfg, a, stdout)
	case a.client != "":
		err = ptClient(ctx, cfg, ptHostPort(a.client), stdout)
	default:
		err = ptLoopback(ctx, cfg, a, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "iwarp perf -perftest:", err)
		return 1
	}
	return 0
}

// config applies perftest's defaults where a flag was not given: an RDMA
// Write bandwidth test (ib_write_bw), 65536 bytes and 5000 iterations for
// bandwidth tests, 2 bytes and 1000 iterations for latency tests, 128
// work requests in flight.
func (a *perftestArgs) config() (*ptConfig, error) {
	cfg := &ptConfig{size: a.size, iters: a.iters, txDepth: a.depth, noCRC: a.noCRC, timeout: 2 * time.Minute}
	if !a.set["op"] {
		a.op = "write"
	}
	if !a.set["mode"] {
		a.mode = "bw"
	}
	switch a.op {
	case "write":
		cfg.op = perfWrite
	case "send":
		cfg.op = perfSend
	case "read":
		cfg.op = perfRead
	default:
		return nil, fmt.Errorf("-op must be write, send or read (perftest's ib_write_*, ib_send_*, ib_read_*), not %q", a.op)
	}
	switch a.mode {
	case "bw":
	case "lat":
		cfg.lat = true
	default:
		return nil, fmt.Errorf("-mode must be bw or lat (perftest's ib_*_bw or ib_*_lat), not %q", a.mode)
	}
	if !a.set["size"] {
		cfg.size = 65536
		if cfg.lat {
			cfg.size = 2
		}
	}
	if !a.set["n"] {
		cfg.iters = 5000
		if cfg.lat {
			cfg.iters = 1000
		}
	}
	if !a.set["q"] {
		cfg.txDepth = 128
	}
	if cfg.iters < 1 || cfg.size < 1 || cfg.size > 1<<26 {
		return nil, fmt.Errorf("-n must be positive (perftest's iterations; -d is not supported) and -size 1 .. 64 MiB")
	}
	// perftest itself never gives up; ours bounds a test by two minutes
	// plus a millisecond per iteration and a second per MiB moved, far
	// beyond any link's pace, so that only a stalled peer meets it.
	cfg.timeout += time.Duration(cfg.iters)*time.Millisecond + time.Duration(int64(cfg.iters)*int64(cfg.size)>>20)*time.Second
	return cfg, nil
}

// ptServerMain listens (on -a, default 0.0.0.0:18515) and serves one test.
// As the all-in-one child it listens on a free loopback port, prints it
// first, and stops when its standard input closes.
func ptServerMain(ctx context.Context, cfg *ptConfig, a perftestArgs, stdout io.Writer) error {
	addr := a.addr
	if addr == "" {
		addr = "0.0.0.0:18515"
		if a.child {
			addr = "127.0.0.1:0"
		}
	}
	ln, err := iwarp.Listen("tcp", ptHostPort(addr), nil)
	if err != nil {
		return err
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.child {
		fmt.Fprintln(stdout, ln.Addr())
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	} else {
		fmt.Fprintf(stdout, "iwarp perf -perftest: %s server on %v, waiting for a perftest client (%s -R -p PORT ... HOST)\n", cfg.name(), ln.Addr(), cfg.name())
	}
	return ptServe(ctx, cfg, ln, stdout)
}

// ptLoopback runs the server as a child process on loopback and the client
// here (no arguments needed).
func ptLoopback(ctx context.Context, cfg *ptConfig, a perftestArgs, stdout io.Writer) error {
	args := []string{"-perftest", "-child", "-op", a.op, "-mode", a.mode,
		"-size", fmt.Sprint(cfg.size), "-n", fmt.Sprint(cfg.iters), "-q", fmt.Sprint(cfg.txDepth)}
	if cfg.noCRC {
		args = append(args, "-nocrc")
	}
	cmd, err := perfChildCmd(args...)
	if err != nil {
		return err
	}
	var srvOut strings.Builder
	cmd.Stderr = os.Stderr
	line, exited, stop, err := startChildOutput(cmd, &srvOut)
	if err != nil {
		return err
	}
	err = ptClient(ctx, cfg, line, stdout)
	if err == nil {
		// The server finishes its side (its checks, its report) on its
		// own; stop only a server that does not.
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
	}
	serr := stop()
	fmt.Fprintf(stdout, "server side:\n%s", srvOut.String())
	if err == nil && serr != nil {
		err = fmt.Errorf("server: %w", serr)
	}
	return err
}

// printHeader prints perftest's banner for the test.
func (s *ptSession) printHeader() {
	role := "server"
	if s.client {
		role = "client"
	}
	fmt.Fprintf(s.out, "---------------------------------------------------------------------------------------\n")
	fmt.Fprintf(s.out, " %s (perftest protocol, peer version %s), %s\n", s.cfg.name(), s.peerV, role)
	fmt.Fprintf(s.out, " local: QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016x\n", 1, s.data.psn, s.data.record().RKey, s.data.record().VAddr)
	fmt.Fprintf(s.out, " remote: QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016x OutReads %d\n", s.rem.QPN, s.rem.PSN, s.rem.RKey, s.rem.VAddr, s.rem.OutReads)
	a := s.data.qp.Attributes()
	onOff := map[bool]string{false: "off", true: "on"}
	p2p := "no P2P"
	if a.P2P {
		p2p = "P2P RTR " + a.RTR
	}
	fmt.Fprintf(s.out, " data connection: %s -> %s, MPA rev %d, CRC %s, %s, IRD %d ORD %d, MULPDU %d\n",
		a.LocalAddr, a.PeerAddr, a.MPARevision, onOff[a.CRC], p2p, a.IRD, a.ORD, a.MULPDU)
	fmt.Fprintf(s.out, "---------------------------------------------------------------------------------------\n")
}

// printResult prints perftest's result line (the server of a bandwidth
// test prints the client's report, as perftest does) and what was checked.
func (s *ptSession) printResult(r *ptResult) {
	if r.lat != nil {
		l := r.lat
		fmt.Fprintf(s.out, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n")
		fmt.Fprintf(s.out, " %-6d %-11d %-14.2f %-14.2f %-16.2f %-14.2f %-15.2f %-22.2f %.2f\n", s.cfg.size, s.cfg.iters, l.Min, l.Max, l.Median, l.Avg, l.Stdev, l.P99, l.P999)
	} else if r.report.Iters > 0 {
		p := r.report
		fmt.Fprintf(s.out, " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n")
		fmt.Fprintf(s.out, " %-10d %-14d %-18.2f %-20.2f %.6f\n", p.Size, p.Iters, p.PeakMBps, p.AvgMBps, p.MsgRateMpps)
	}
	fmt.Fprintf(s.out, "---------------------------------------------------------------------------------------\n")
	if r.verified != "" {
		fmt.Fprintf(s.out, "verified: %s\n", r.verified)
	}
	fmt.Fprintf(s.out, "%s: done\n", s.cfg.name())
}
