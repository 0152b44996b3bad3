package fpdu

import (
	"bufio"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// vectorDir holds the project's shared wire vectors (shared/vectors).
const vectorDir = "../../../shared/vectors/"

// vector is one row of a shared/vectors TSV file.
type vector struct {
	name, direction, meaning string
	raw                      []byte
}

// loadVectors reads a TSV vector file; with fpduOnly it keeps only the
// rows that are FPDUs (not MPA Request/Reply frames).
func loadVectors(t testing.TB, file string, fpduOnly bool) []vector {
	t.Helper()
	f, err := os.Open(vectorDir + file)
	if err != nil {
		t.Fatalf("vectors: %v", err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "name\t") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			t.Fatalf("%s: bad row %q", file, line)
		}
		raw, err := hex.DecodeString(cols[3])
		if err != nil {
			t.Fatalf("%s %s: %v", file, cols[0], err)
		}
		if fpduOnly && strings.HasPrefix(cols[0], "mpa-") {
			continue
		}
		out = append(out, vector{cols[0], cols[1], cols[2], raw})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
