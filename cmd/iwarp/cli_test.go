package main

import (
	"bytes"
	"strings"
	"testing"
)

// runCLI runs the tool in-process with args and returns its exit status
// and what it printed.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = runMain(args, &o, &e)
	return code, o.String(), e.String()
}

// exitCase is one row of a command's exit-status table.
type exitCase struct {
	name string
	args []string
	code int
	// out and errOut, when set, must appear in standard output and
	// standard error.
	out, errOut string
}

// runExitCases runs a table of exit-status cases.
func runExitCases(t *testing.T, cases []exitCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, c.args...)
			if code != c.code {
				t.Errorf("iwarp %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, out, errOut)
			}
			if c.out != "" && !strings.Contains(out, c.out) {
				t.Errorf("stdout lacks %q:\n%s", c.out, out)
			}
			if c.errOut != "" && !strings.Contains(errOut, c.errOut) {
				t.Errorf("stderr lacks %q:\n%s", c.errOut, errOut)
			}
		})
	}
}

func TestMainExitCodes(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "no command", args: nil, code: exitUsage, errOut: "usage: iwarp"},
		{name: "help", args: []string{"help"}, code: exitOK, out: "commands:"},
		{name: "-h", args: []string{"-h"}, code: exitOK, out: "commands:"},
		{name: "unknown", args: []string{"nosuch"}, code: exitUsage, errOut: `unknown command "nosuch"`},
		{name: "version", args: []string{"version"}, code: exitOK, out: "iwarp "},
		{name: "version -h", args: []string{"version", "-h"}, code: exitOK, out: "usage: iwarp version"},
		{name: "version bad flag", args: []string{"version", "-x"}, code: exitUsage, errOut: "flag provided but not defined"},
		{name: "version extra", args: []string{"version", "x"}, code: exitUsage},
		{name: "help version", args: []string{"help", "version"}, code: exitOK, out: "usage: iwarp version"},
	})
}

func TestHostPort(t *testing.T) {
	for _, c := range []struct {
		addr    string
		port    int
		portSet bool
		want    string
		bad     bool
	}{
		{"", 7174, false, "127.0.0.1:7174", false},
		{"10.0.0.1", 7174, false, "10.0.0.1:7174", false},
		{"10.0.0.1:99", 7174, false, "10.0.0.1:99", false},
		{"10.0.0.1:99", 99, true, "10.0.0.1:99", false},
		{"10.0.0.1:99", 98, true, "", true},
		{"::1", 5, false, "[::1]:5", false},
		{"[::1]:6", 0, false, "[::1]:6", false},
		{":8", 0, false, "127.0.0.1:8", false},
		{"h", 70000, true, "", true},
	} {
		got, err := hostPort(c.addr, c.port, c.portSet)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("hostPort(%q, %d, %v) = %q, %v; want %q, bad=%v", c.addr, c.port, c.portSet, got, err, c.want, c.bad)
		}
	}
}
