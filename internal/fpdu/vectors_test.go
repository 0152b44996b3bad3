package fpdu

import (
	"slices"
	"testing"

	"github.com/goiwarp/iwarp/internal/vectors"
)

// vectorDir holds the project's shared wire vectors (internal/vectors/testdata).
const vectorDir = "../vectors/testdata/"

// loadVectors reads a vector file; with fpduOnly it keeps only the
// rows that are FPDUs (not MPA Request/Reply frames).
func loadVectors(t testing.TB, file string, fpduOnly bool) []vectors.Frame {
	t.Helper()
	fs, err := vectors.ReadFile(vectorDir + file)
	if err != nil {
		t.Fatal(err)
	}
	if fpduOnly {
		fs = slices.DeleteFunc(fs, vectors.Frame.MPA)
	}
	return fs
}
