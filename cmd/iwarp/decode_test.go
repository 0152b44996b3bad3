package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The -update flag regenerates testdata/decode/*.golden:
//
//	go test ./cmd/iwarp -run TestDecodeGolden -update
//
// It is registered here unless another test file of the package already did.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files of the tests")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// sharedDir is the shared test material, relative to this package.
const sharedDir = "../../../shared"

// goldenInputs lists every capture and vector file with a golden output.
func goldenInputs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"interop/captures/*.pcap", "interop/captures/*.hex", "vectors/*.tsv"} {
		m, err := filepath.Glob(filepath.Join(sharedDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skipf("no shared captures or vectors under %s", sharedDir)
	}
	return files
}

func TestDecodeGolden(t *testing.T) {
	for _, in := range goldenInputs(t) {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if st := runDecode([]string{in}, &out, &errOut); st != 0 {
				t.Fatalf("exit %d: %s", st, errOut.String())
			}
			golden := filepath.Join("testdata", "decode", name+".golden")
			if updating() {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("output differs from %s:\n%s", golden, lineDiff(string(want), out.String()))
			}
		})
	}
}

// lineDiff shows the first differing lines.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\nwant: %s\ngot:  %s", i+1, a, b)
		}
	}
	return "(lengths differ)"
}

func TestDecodeErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if st := runDecode([]string{"testdata/decode/no-such-file.pcap"}, &out, &errOut); st == 0 {
		t.Errorf("missing file: exit 0")
	}
	if st := runDecode(nil, &out, &errOut); st != 2 {
		t.Errorf("no arguments: exit %d, want 2", st)
	}
	if st := runDecode([]string{"-port", "x", "f"}, &out, &errOut); st != 2 {
		t.Errorf("bad -port: exit %d, want 2", st)
	}
	bad := filepath.Join(t.TempDir(), "bad.tsv")
	if err := os.WriteFile(bad, []byte("name\tdirection\thex\nx\tI->R\tzz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st := runDecode([]string{bad}, &out, &errOut); st != 1 {
		t.Errorf("malformed vector file: exit %d, want 1", st)
	}
	binary := filepath.Join(t.TempDir(), "x.bin")
	if err := os.WriteFile(binary, []byte{0, 1, 2, 0xff, 0xfe}, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := runDecode([]string{binary}, &out, &errOut); st != 1 {
		t.Errorf("binary file: exit %d, want 1", st)
	}
	// A capture cut inside a packet: what was read is printed, exit 1.
	pcap, err := os.ReadFile(filepath.Join(sharedDir, "interop/captures/f_eth0.pcap"))
	if err != nil {
		t.Skip(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(cut, pcap[:len(pcap)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if st := runDecode([]string{cut}, &out, &errOut); st != 1 || !strings.Contains(out.String(), "MPA Request") ||
		!strings.Contains(errOut.String(), "damaged") {
		t.Errorf("cut capture: exit %d, output %q, errors %q", st, out.String(), errOut.String())
	}
}
