package cmdline

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestStatus: -h prints the usage to standard output and exits 0, a wrong
// flag or value prints the error and the usage to standard error and exits
// 2, a failed run exits 1.
func TestStatus(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("ex", flag.ContinueOnError)
		fs.Int("n", 1, "how many")
		return fs
	}
	for _, c := range []struct {
		name        string
		err         func() error
		code        int
		out, errOut string
	}{
		{"success", func() error { return Parse(newFS(), []string{"-n", "2"}) }, ExitOK, "", ""},
		{"-h", func() error { return Parse(newFS(), []string{"-h"}) }, ExitOK, "usage: ex [options]", ""},
		{"unknown flag", func() error { return Parse(newFS(), []string{"-x"}) }, ExitUsage, "", "ex: flag provided but not defined: -x\nusage: ex"},
		{"malformed value", func() error { return Parse(newFS(), []string{"-n", "y"}) }, ExitUsage, "", `invalid value "y" for flag -n`},
		{"argument", func() error { return Parse(newFS(), []string{"z"}) }, ExitUsage, "", `ex: unexpected argument "z"`},
		{"bad value", func() error { return BadValue(newFS(), "n", -1, "must be positive") }, ExitUsage, "", "ex: -n -1: must be positive\nusage: ex"},
		{"failure", func() error { return errors.New("it broke") }, ExitFail, "", "ex: it broke\n"},
	} {
		var out, errOut bytes.Buffer
		if code := Status("ex", c.err(), &out, &errOut); code != c.code {
			t.Errorf("%s: exit %d, want %d", c.name, code, c.code)
		}
		if !strings.Contains(out.String(), c.out) || (c.out == "") != (out.Len() == 0) {
			t.Errorf("%s: stdout %q, want %q", c.name, out.String(), c.out)
		}
		if !strings.Contains(errOut.String(), c.errOut) || (c.errOut == "") != (errOut.Len() == 0) {
			t.Errorf("%s: stderr %q, want %q", c.name, errOut.String(), c.errOut)
		}
	}
}
