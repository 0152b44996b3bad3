package vectors

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// AtomicsFile is the shared vector file of masked atomic results, computed
// from the pseudo-code of RFC 7306 section 5.1.
const AtomicsFile = "atomics.tsv"

// Atomic is one row of atomics.tsv: an operation on the 64-bit word
// Original and the word it leaves (Result). The original value is what the
// operation returns.
type Atomic struct {
	Op          string // "fetchadd" or "cmpswap"
	Original    uint64 // the word before the operation
	Data        uint64 // Add Data, or Swap Data
	Mask        uint64 // Add Mask (carry boundaries), or Swap Mask
	Compare     uint64 // Compare Data (cmpswap only)
	CompareMask uint64 // Compare Mask (cmpswap only)
	Result      uint64 // the word after the operation
}

// ParseAtomics reads the rows of atomics.tsv: tab-separated op and six
// 64-bit hex words, after '#' comment lines and a header row.
func ParseAtomics(r io.Reader) ([]Atomic, error) {
	var out []Atomic
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "op\t") {
			continue
		}
		c := strings.Split(s, "\t")
		if len(c) != 7 {
			return nil, fmt.Errorf("vectors: atomics line %d: %d columns, want 7", line, len(c))
		}
		if c[0] != "fetchadd" && c[0] != "cmpswap" {
			return nil, fmt.Errorf("vectors: atomics line %d: unknown op %q", line, c[0])
		}
		var v [6]uint64
		for i := range v {
			var err error
			if v[i], err = strconv.ParseUint(c[i+1], 16, 64); err != nil {
				return nil, fmt.Errorf("vectors: atomics line %d: %v", line, err)
			}
		}
		out = append(out, Atomic{c[0], v[0], v[1], v[2], v[3], v[4], v[5]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	return out, nil
}

// ReadAtomics reads the atomics vector file at path.
func ReadAtomics(path string) ([]Atomic, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseAtomics(f)
}
