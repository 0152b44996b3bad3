// Package vectors reads the project's shared wire vector files
// (internal/vectors/testdata/*.tsv, see their README.md) for the tests of the wire,
// framing and decoding packages. Each row of such a file is one frame on
// the wire: an MPA Request or Reply, or a whole FPDU (ULPDU_Length, ULPDU,
// pad, CRC32c little-endian).
//
// It is test support only: no package of the library imports it.
package vectors

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// FrameFiles are the vector files whose rows are frames, in the shared
// vectors directory (the other file, atomics.tsv, holds masked atomic
// results, not frames).
var FrameFiles = []string{"fpdus.tsv", "v2.tsv", "markers.tsv"}

// Frame is one row of a vector file.
type Frame struct {
	Name      string // unique row name; MPA frames are named "mpa-..."
	Direction string // "I->R" (Initiator to Responder) or "R->I"
	Meaning   string // what the frame is, in words
	Bytes     []byte // the frame as it is on the wire
}

// MPA reports whether the frame is an MPA Request or Reply rather than an
// FPDU.
func (f Frame) MPA() bool { return strings.HasPrefix(f.Name, "mpa-") }

// Initiator reports whether the Initiator sent the frame.
func (f Frame) Initiator() bool { return f.Direction == "I->R" }

// Parse reads the rows of a vector file: tab-separated name, direction,
// meaning and hex, after '#' comment lines and a header row.
func Parse(r io.Reader) ([]Frame, error) {
	var out []Frame
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "name\t") {
			continue
		}
		cols := strings.Split(s, "\t")
		if len(cols) != 4 {
			return nil, fmt.Errorf("vectors: line %d: %d columns, want 4", line, len(cols))
		}
		if cols[1] != "I->R" && cols[1] != "R->I" {
			return nil, fmt.Errorf("vectors: line %d (%s): direction %q", line, cols[0], cols[1])
		}
		b, err := hex.DecodeString(cols[3])
		if err != nil {
			return nil, fmt.Errorf("vectors: line %d (%s): %v", line, cols[0], err)
		}
		out = append(out, Frame{cols[0], cols[1], cols[2], b})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	return out, nil
}

// ReadFile reads the vector file at path.
func ReadFile(path string) ([]Frame, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}
