package main

import (
	"flag"
	"strings"
)

// getoptArgs rewrites the getopt spellings of a tool's single-letter
// options (optstring as getopt(3) takes it: a letter, followed by ':' when
// it takes a value) into the flag package's: bundled options ("-vVd",
// "-cvV") become one argument each, and a value attached to its option
// ("-S64", "-a127.0.0.1") a separate argument. An argument that names a
// flag of fs ("-nocrc", "-a=HOST") is left as it is, so the tool's own
// longer options never collide with a bundle; so is anything that is not
// a valid bundle, for the flag package to report.
func getoptArgs(fs *flag.FlagSet, optstring string, args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if len(a) < 3 || a[0] != '-' || a[1] == '-' || fs.Lookup(name) != nil {
			out = append(out, a)
			continue
		}
		if split, ok := getoptSplit(a[1:], optstring); ok {
			out = append(out, split...)
		} else {
			out = append(out, a)
		}
	}
	return out
}

// getoptSplit splits one bundle of options (without its dash).
func getoptSplit(bundle, optstring string) ([]string, bool) {
	var out []string
	for j := 0; j < len(bundle); j++ {
		k := strings.IndexByte(optstring, bundle[j])
		if bundle[j] == ':' || k < 0 {
			return nil, false
		}
		out = append(out, "-"+bundle[j:j+1])
		if k+1 < len(optstring) && optstring[k+1] == ':' {
			if rest := bundle[j+1:]; rest != "" {
				out = append(out, rest)
			}
			break
		}
	}
	return out, true
}
