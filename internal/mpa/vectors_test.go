package mpa

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Test vectors live in testdata/ (the header of each file gives its
// origin).

// hexBytes decodes hex with optional spaces.
func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// readLines returns the lines of a testdata file.
func readLines(t testing.TB, name string) []string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// namedHex is one frame vector.
type namedHex struct {
	name string
	b    []byte
}

// tsvVectors returns the mpa-* rows of the shared vector files.
func tsvVectors(t testing.TB) []namedHex {
	var out []namedHex
	for _, l := range readLines(t, "vectors.tsv") {
		if l == "" || l[0] == '#' {
			continue
		}
		cols := strings.Split(l, "\t")
		if len(cols) != 4 {
			t.Fatalf("vectors.tsv: bad row %q", l)
		}
		out = append(out, namedHex{cols[0], hexBytes(t, cols[3])})
	}
	return out
}

// siwRequests returns the Requests sent by siw (siw_mpa_request.hex): every
// uncommented hex line, named siw-request-N in file order.
func siwRequests(t testing.TB) []namedHex {
	var out []namedHex
	for _, l := range readLines(t, "siw_mpa_request.hex") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, namedHex{"siw-request-" + strconv.Itoa(len(out)+1), hexBytes(t, l)})
	}
	return out
}

// probe is one Request sent to siw and siw's Reply (siw_mpa_reply.hex).
type probe struct {
	name     string
	req, rep []byte
}

// siwProbes returns the req:/rep: pairs of siw_mpa_reply.hex.
func siwProbes(t testing.TB) []probe {
	var out []probe
	var cur probe
	for _, l := range readLines(t, "siw_mpa_reply.hex") {
		switch {
		case strings.HasPrefix(l, "## probe "):
			cur = probe{name: strings.TrimPrefix(l, "## probe ")}
		case strings.HasPrefix(l, "req: "):
			cur.req = hexBytes(t, strings.TrimPrefix(l, "req: "))
		case strings.HasPrefix(l, "rep: "):
			cur.rep = hexBytes(t, strings.TrimPrefix(l, "rep: "))
			out = append(out, cur)
		}
	}
	if len(out) == 0 {
		t.Fatal("no probes in siw_mpa_reply.hex")
	}
	return out
}

// allFrameVectors returns every frame of the vector files.
func allFrameVectors(t testing.TB) []namedHex {
	out := append(tsvVectors(t), siwRequests(t)...)
	for _, p := range siwProbes(t) {
		out = append(out, namedHex{p.name + "/req", p.req}, namedHex{p.name + "/rep", p.rep})
	}
	return out
}
