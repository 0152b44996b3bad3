package main

import (
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/goiwarp/iwarp/internal/perf"
	"github.com/goiwarp/iwarp/internal/perftest"
)

// What each way of running "iwarp perf" uses besides -s, -c, -a, -p and
// -cpuprofile, and what it says of a flag it does not use.
var perfModeFlags = []struct {
	mode, why string
	flags     []string
}{
	{"perftest", "not used with -perftest (perftest's programs take -op, -mode, -size, -n, -q and -nocrc)",
		[]string{"perftest", "op", "mode", "size", "n", "q", "nocrc"}},
	{"server", "not used with -s (the client says what to measure)", nil},
	{"vs-tcp", "not used with -vs-tcp (its targets say what to measure: pick them with -targets)",
		[]string{"vs-tcp", "pairs", "trial", "idleqps", "loadqps", "targets", "json", "png"}},
	{"tests", "only with -vs-tcp",
		[]string{"op", "mode", "size", "sweep", "min", "max", "n", "d", "q", "qps", "slots", "nocrc", "json", "png"}},
}

// perfMaxIters bounds -n (longer runs are for -d).
const perfMaxIters = 1_000_000_000

// perfMode is the way this run goes: perftest, server, vs-tcp or tests.
func (p *perfFlags) perfMode(role string) string {
	switch {
	case p.perftest || role == childPerftestServer:
		return "perftest"
	case p.server || role == childPerfServer:
		return "server"
	case p.vsTCP:
		return "vs-tcp"
	}
	return "tests"
}

// check validates the flags for the run's mode and reports the first wrong
// one.
func (p *perfFlags) check(role string) (int, bool) {
	if role != "" && !isPerfChildRole(role) {
		fmt.Fprintf(p.stderr, "iwarp perf: %s=%s is not a child role of this command\n", perfChildEnv, role)
		return exitUsage, false
	}
	mode := p.perfMode(role)
	for _, m := range perfModeFlags {
		if m.mode != mode {
			continue
		}
		bad := ""
		p.Visit(func(fl *flag.Flag) {
			if bad == "" && !slices.Contains(append([]string{"s", "c", "a", "p", "cpuprofile"}, m.flags...), fl.Name) {
				bad = fl.Name
			}
		})
		if bad != "" {
			fmt.Fprintf(p.stderr, "iwarp perf: -%s: %s\n", bad, m.why)
			return exitUsage, false
		}
	}
	switch {
	case p.server && p.client:
		fmt.Fprintln(p.stderr, "iwarp perf: -c: not with -s (a process is the server or a client)")
		return exitUsage, false
	case p.server && p.hostGiven:
		fmt.Fprintf(p.stderr, "iwarp perf: %s: a server listens on -a and -p, it takes no server address\n", p.host)
		return exitUsage, false
	case p.hostGiven && flagSet(p.FlagSet, "a"):
		fmt.Fprintf(p.stderr, "iwarp perf: -a %s: the server is %s already\n", p.addr, p.host)
		return exitUsage, false
	case !p.server && !p.client && !p.hostGiven && role == "" && (flagSet(p.FlagSet, "a") || flagSet(p.FlagSet, "p")):
		fmt.Fprintln(p.stderr, "iwarp perf: -a and -p need -s (listen there) or -c (connect there)")
		return exitUsage, false
	}
	if !p.checkNumbers(mode) {
		return exitUsage, false
	}
	return p.checkWords(mode)
}

// checkNumbers checks the numeric flags given (their defaults are valid).
func (p *perfFlags) checkNumbers(mode string) bool {
	set := func(name string) bool { return flagSet(p.FlagSet, name) }
	minIters := int64(0)
	if mode == "perftest" {
		minIters = 1 // perftest counts iterations; -d is not used
	}
	for _, c := range []struct {
		name   string
		v      int
		lo, hi int64
	}{
		{"p", p.port, 0, 65535}, {"size", p.size, 1, perf.MaxSize}, {"min", p.minSize, 1, perf.MaxSize},
		{"max", p.maxSize, 1, perf.MaxSize}, {"n", p.iters, minIters, perfMaxIters}, {"q", p.depth, 1, perf.MaxDepth},
		{"qps", p.qps, 1, perf.MaxDepth}, {"pairs", p.pairs, 1, 1000}, {"idleqps", p.idleQPs, 1, perf.MaxIdleQPs},
		{"loadqps", p.loadQPs, 1, perf.MaxDepth}, {"slots", p.slots, 1, perf.MaxSlots},
	} {
		if set(c.name) && !p.checkInt(c.name, int64(c.v), c.lo, c.hi) {
			return false
		}
	}
	largest := p.size
	if p.sweep {
		largest = p.maxSize
	}
	if int64(p.slots)*int64(largest) > perf.MaxSize {
		p.badFlag("slots", p.slots, "times the message size %d is over %d bytes", largest, perf.MaxSize)
		return false
	}
	if p.minSize > p.maxSize {
		p.badFlag("max", p.maxSize, "must not be below -min %d", p.minSize)
		return false
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"d", p.dur}, {"trial", p.trial}} {
		if d.v <= 0 {
			p.badFlag(d.name, d.v, "must be positive")
			return false
		}
	}
	if (p.client || p.hostGiven) && set("p") && p.port == 0 {
		p.badFlag("p", 0, "a client needs the server's port")
		return false
	}
	return true
}

// checkWords checks the flags that name things: operations, modes,
// targets.
func (p *perfFlags) checkWords(mode string) (int, bool) {
	if mode == "perftest" {
		if _, err := perftest.ParseOp(p.ops); flagSet(p.FlagSet, "op") && err != nil {
			return p.badFlag("op", p.ops, "%v", err), false
		}
		if m := p.mode; flagSet(p.FlagSet, "mode") && m != "bw" && m != "lat" {
			return p.badFlag("mode", m, "must be bw or lat (perftest's ib_*_bw or ib_*_lat)"), false
		}
		return exitOK, true
	}
	if _, err := perf.ParseOps(p.ops); err != nil {
		return p.badFlag("op", p.ops, "%v", err), false
	}
	if _, err := perf.ParseModes(p.mode); err != nil {
		return p.badFlag("mode", p.mode, "%v", err), false
	}
	if _, err := perf.ParseTargets(p.targets); err != nil {
		return p.badFlag("targets", p.targets, "%v", err), false
	}
	return exitOK, true
}

// serverAddr returns the address to dial or listen on from -a, -p and
// HOST[:PORT], with the mode's default port.
func (p *perfFlags) serverAddr(defaultPort int) (string, error) {
	a := p.addr
	if p.hostGiven {
		a = p.host
	}
	port, portSet := defaultPort, flagSet(p.FlagSet, "p")
	if portSet {
		port = p.port
	}
	return hostPort(a, port, portSet)
}
