package vectors

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := "# comment\nname\tdirection\tmeaning\thex\n" +
		"mpa-request\tI->R\tMPA Request\t4d5041\n" +
		"\n" +
		"send-msn1\tR->I\ta Send\t000e\n"
	fs, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 {
		t.Fatalf("%d frames, want 2", len(fs))
	}
	if f := fs[0]; f.Name != "mpa-request" || !f.MPA() || !f.Initiator() || f.Meaning != "MPA Request" || !bytes.Equal(f.Bytes, []byte("MPA")) {
		t.Errorf("row 1: %+v", f)
	}
	if f := fs[1]; f.MPA() || f.Initiator() || !bytes.Equal(f.Bytes, []byte{0, 14}) {
		t.Errorf("row 2: %+v", f)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{
		"a\tI->R\tm\n",          // three columns
		"a\tI->R\tm\tzz\n",      // not hex
		"a\tsideways\tm\t00\n",  // unknown direction
		"a\tI->R\tm\t00\textra", // five columns
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("%q: accepted", in)
		}
	}
}

// TestSharedFiles reads every shared vector file of frames: each must
// parse and start with the MPA Request and Reply; and FrameFiles must name
// every vector file but atomics.tsv, so no new file goes unread.
func TestSharedFiles(t *testing.T) {
	const dir = "testdata/"
	all, err := filepath.Glob(dir + "*.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		if b := filepath.Base(f); b != AtomicsFile && !slices.Contains(FrameFiles, b) {
			t.Errorf("%s is not in FrameFiles", b)
		}
	}
	for _, file := range FrameFiles {
		fs, err := ReadFile(dir + file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(fs) < 3 {
			t.Fatalf("%s: %d frames", file, len(fs))
		}
		if !fs[0].MPA() || !fs[1].MPA() || fs[2].MPA() {
			t.Errorf("%s: first frames %q %q %q", file, fs[0].Name, fs[1].Name, fs[2].Name)
		}
	}
}
