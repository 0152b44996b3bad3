// Command iwarp is the command-line tool of the iWARP stack.
//
// Usage:
//
//	iwarp <command> [arguments]
//
// Run "iwarp help" for the list of commands.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand of the iwarp tool.
type command struct {
	name  string
	short string // one-line description shown by "iwarp help"
	// run executes the command with its arguments (without the command name),
	// writing its normal output to stdout and diagnostics to stderr. It returns
	// the process exit status.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands is filled by each subcommand's init function, one file per command.
var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("iwarp: duplicate command " + c.name)
	}
	commands[c.name] = c
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: iwarp <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].short)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "iwarp <command> -h" (or "iwarp help <command>") for a command's options.`)
}

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run([]string{"-h"}, stdout, stderr)
			}
		}
		usage(stdout)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "iwarp: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(args[1:], stdout, stderr)
}
