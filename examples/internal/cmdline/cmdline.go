// Package cmdline is the command-line handling the examples share, with
// the exit statuses of the iwarp tool: -h prints the usage to standard
// output and exits 0; a wrong flag or value prints the error and the usage
// to standard error and exits 2; a run that fails prints its error and
// exits 1.
package cmdline

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// UsageError is a command line that asks for the usage (-h) or is wrong.
type UsageError struct {
	FlagSet *flag.FlagSet
	// Err is flag.ErrHelp for -h, else what is wrong.
	Err error
}

// Error returns what is wrong.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *UsageError) Unwrap() error { return e.Err }

// Parse parses args with fs. It returns a *UsageError when the command must
// stop (-h, a flag that is not defined or a malformed value); Status prints
// it.
func Parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard) // Status prints the error and the usage
	if err := fs.Parse(args); err != nil {
		return &UsageError{FlagSet: fs, Err: err}
	}
	if fs.NArg() > 0 {
		return &UsageError{FlagSet: fs, Err: fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// BadValue returns the *UsageError of flag name's value v: "-name v:
// what is wrong".
func BadValue(fs *flag.FlagSet, name string, v any, format string, args ...any) error {
	return &UsageError{FlagSet: fs, Err: fmt.Errorf("-%s %v: %s", name, v, fmt.Sprintf(format, args...))}
}

// Status prints err as command name and returns the exit status.
func Status(name string, err error, stdout, stderr io.Writer) int {
	var u *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &u) && errors.Is(u.Err, flag.ErrHelp):
		usage(u.FlagSet, stdout)
		return ExitOK
	case errors.As(err, &u):
		fmt.Fprintf(stderr, "%s: %v\n", name, u.Err)
		usage(u.FlagSet, stderr)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return ExitFail
}

// usage writes fs's usage to w.
func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "usage: %s [options]\n\noptions:\n", fs.Name())
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// RunArgs runs run with args as command name does, without exiting, and
// returns the exit status and what it printed (for tests).
func RunArgs(name string, run func(ctx context.Context, args []string, stdout io.Writer) error, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Status(name, run(context.Background(), args, &out), &out, &errOut)
	return code, out.String(), errOut.String()
}

// Main runs run with the program's arguments and a context that ends on an
// interrupt, and exits with the status Status gives.
func Main(name string, run func(ctx context.Context, args []string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := Status(name, run(ctx, os.Args[1:], os.Stdout), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
