package main

import (
	"fmt"
	"strings"
	"time"
)

// Flag helpers of demo, serve and conform (cli.go's conventions).

// addrFromFlags joins command f's -a HOST[:PORT] and -p PORT into one
// address. A wrong value is reported as the conventions say and ok is
// false: the command exits 2.
func addrFromFlags(f *cmdFlags, addr string, port int) (string, bool) {
	if !f.checkInt("p", int64(port), 0, 65535) {
		return "", false
	}
	hp, err := hostPort(addr, port, flagSet(f.FlagSet, "p"))
	if err != nil {
		// hostPort's message may start with the flag and value badFlag
		// prints itself.
		f.badFlag("a", addr, "%s", strings.TrimPrefix(err.Error(), "-a "+addr+" "))
		return "", false
	}
	return hp, true
}

// noArgs reports whether command f was given no positional argument; if
// it was, it reports the first and returns false (the command exits 2).
func noArgs(f *cmdFlags) bool {
	if f.NArg() == 0 {
		return true
	}
	fmt.Fprintf(f.stderr, "iwarp %s: unexpected argument %q\n", f.name, f.Arg(0))
	return false
}

// checkDuration reports whether the duration flag v lies in [lo, hi]; if
// not it reports the flag and returns false (the command exits 2).
func checkDuration(f *cmdFlags, flagName string, v, lo, hi time.Duration) bool {
	if v < lo || v > hi {
		f.badFlag(flagName, v, "must be between %v and %v", lo, hi)
		return false
	}
	return true
}
