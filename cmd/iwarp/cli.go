package main

// The conventions every command of the tool follows (docs/cli.md):
//
//   - Exit status: 0 the command did what it was asked and every check
//     passed; 1 it ran and failed (a peer error, a FAIL verdict, a data
//     mismatch, an input that is not what it must be, an empty result);
//     2 it was called wrongly (an unknown or malformed flag, a value out of
//     range, a selection that matches nothing) and did nothing.
//     Commands that mirror another tool (rping) keep that tool's codes where
//     it documents them; docs/cli.md lists each command's.
//   - "-h" and "-help" print the usage to standard output and exit 0.
//   - Usage starts with one line "usage: iwarp NAME SYNOPSIS", then a
//     paragraph, then "options:" and the flags.
//   - Addresses: "-a HOST[:PORT]" and "-p PORT" (rping's flags). The default
//     address is 127.0.0.1 for every command, listening or dialling. Commands
//     that mirror a tool also take that tool's spelling (rdma_server's -s,
//     perftest's positional host).
//   - A wrong flag value is reported as "iwarp NAME: -FLAG VALUE: what is
//     wrong" and exits 2.
//   - Children that a command re-executes are selected by the IWARP_CHILD
//     environment variable, never by a flag: "-h" shows users only flags
//     they may type.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
)

// Exit statuses (see the conventions above).
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// defaultHost is the address every command listens on or dials by default.
const defaultHost = "127.0.0.1"

// cmdFlags is a command's flag set with the tool's usage conventions.
type cmdFlags struct {
	*flag.FlagSet
	name     string
	synopsis string
	about    string
	stdout   io.Writer
	stderr   io.Writer
}

// newFlags returns the flag set of command name. synopsis follows the
// command name on the usage line (for example "[options] FILE..."); about
// is a paragraph shown under it.
func newFlags(name, synopsis, about string, stdout, stderr io.Writer) *cmdFlags {
	f := &cmdFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), name: name,
		synopsis: synopsis, about: about, stdout: stdout, stderr: stderr}
	f.SetOutput(io.Discard) // errors are printed by parse, the usage by usage
	return f
}

// usage writes the command's usage to w.
func (f *cmdFlags) usage(w io.Writer) {
	fmt.Fprintln(w, strings.TrimSpace("usage: iwarp "+f.name+" "+f.synopsis))
	if f.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(f.about))
	}
	any := false
	f.VisitAll(func(*flag.Flag) { any = true })
	if any {
		fmt.Fprintln(w, "\noptions:")
		f.SetOutput(w)
		f.PrintDefaults()
		f.SetOutput(io.Discard)
	}
}

// parse parses args. It returns ok=false with the exit status when the
// command must stop: 0 after -h (the usage on standard output), 2 after a
// bad flag (the error and the usage on standard error).
func (f *cmdFlags) parse(args []string) (code int, ok bool) {
	err := f.Parse(args)
	if err == nil {
		return exitOK, true
	}
	if errors.Is(err, flag.ErrHelp) {
		f.usage(f.stdout)
		return exitOK, false
	}
	fmt.Fprintf(f.stderr, "iwarp %s: %v\n", f.name, err)
	f.usage(f.stderr)
	return exitUsage, false
}

// badFlag reports a wrong flag value in the tool's words and returns 2.
// flagName is without the dash.
func (f *cmdFlags) badFlag(flagName string, value any, format string, args ...any) int {
	fmt.Fprintf(f.stderr, "iwarp %s: -%s %v: %s\n", f.name, flagName, value, fmt.Sprintf(format, args...))
	return exitUsage
}

// fail reports an error of the run and returns 1.
func (f *cmdFlags) fail(format string, args ...any) int {
	fmt.Fprintf(f.stderr, "iwarp %s: %s\n", f.name, fmt.Sprintf(format, args...))
	return exitFail
}

// checkInt reports whether v lies in [lo, hi]; if not it reports the flag
// and returns false (the caller returns exitUsage).
func (f *cmdFlags) checkInt(flagName string, v, lo, hi int64) bool {
	if v < lo || v > hi {
		f.badFlag(flagName, v, "must be between %d and %d", lo, hi)
		return false
	}
	return true
}

// hostPort joins -a HOST[:PORT] and -p PORT into one dial or listen
// address. A port inside -a wins unless -p was given too, in which case
// they must agree. port 0 with no port in addr means "any port" for a
// listener.
func hostPort(addr string, port int, portSet bool) (string, error) {
	if addr == "" {
		addr = defaultHost
	}
	if port < 0 || port > 65535 {
		return "", fmt.Errorf("port %d out of range 0..65535", port)
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		// No port in addr (a bare host, possibly an IPv6 literal).
		h = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
		return net.JoinHostPort(h, strconv.Itoa(port)), nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("bad port %q in %q", p, addr)
	}
	if portSet && n != port {
		return "", fmt.Errorf("-a %s names port %d but -p says %d", addr, n, port)
	}
	if h == "" {
		h = defaultHost
	}
	return net.JoinHostPort(h, p), nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
