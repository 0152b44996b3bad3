package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func init() {
	register(&command{
		name:  "version",
		short: "print the tool's version, its module's version and the Go version",
		run:   runVersion,
	})
}

// runVersion implements "iwarp version".
func runVersion(args []string, stdout, stderr io.Writer) int {
	f := newFlags("version", "", "Prints the version of the module the tool was built from (with the\nVCS revision when the build recorded one) and the Go toolchain.", stdout, stderr)
	if code, ok := f.parse(args); !ok {
		return code
	}
	if f.NArg() > 0 {
		fmt.Fprintf(stderr, "iwarp version: unexpected argument %q\n", f.Arg(0))
		return exitUsage
	}
	fmt.Fprintf(stdout, "iwarp %s %s %s/%s\n", moduleVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}

// moduleVersion is the main module's version as the build recorded it:
// a release tag for "go install ...@vX", else "(devel)" with the VCS
// revision and a "+dirty" mark when known.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if v == "(devel)" && rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " " + rev + dirty
	}
	return v
}
