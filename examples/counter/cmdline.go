package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// The command line of the example, with the exit statuses of the iwarp
// tool: -h prints the usage to standard output and exits 0; a wrong flag
// or value prints the error and the usage to standard error and exits 2; a
// run that fails prints its error and exits 1.

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := exitStatus(run(ctx, os.Args[1:], os.Stdout), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a command line that asks for the usage (-h) or is wrong.
type usageError struct {
	fs  *flag.FlagSet
	err error // flag.ErrHelp for -h
}

func (e *usageError) Error() string { return e.err.Error() }

// parseFlags parses args with fs: -h, a wrong flag and an argument are a
// *usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard) // exitStatus prints the usage
	if err := fs.Parse(args); err != nil {
		return &usageError{fs, err}
	}
	if fs.NArg() > 0 {
		return &usageError{fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// badValue is the *usageError of flag name's value v.
func badValue(fs *flag.FlagSet, name string, v any, format string, args ...any) error {
	return &usageError{fs, fmt.Errorf("-%s %v: %s", name, v, fmt.Sprintf(format, args...))}
}

// exitStatus prints err and returns the exit status.
func exitStatus(err error, stdout, stderr io.Writer) int {
	var u *usageError
	switch {
	case err == nil:
		return 0
	case !errors.As(err, &u):
		fmt.Fprintln(stderr, "counter:", err)
		return 1
	case errors.Is(u.err, flag.ErrHelp):
		printUsage(u.fs, stdout)
		return 0
	}
	fmt.Fprintln(stderr, "counter:", u.err)
	printUsage(u.fs, stderr)
	return 2
}

func printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "usage: %s [options]\n\noptions:\n", fs.Name())
	fs.SetOutput(w)
	fs.PrintDefaults()
}
