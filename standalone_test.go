package iwarp_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// workshopRef matches a reference to a folder outside the repository that
// the project's authors once worked from: a path whose folder is named
// "shar"+"ed" (with or without "../" in front). A clone of the repository has no such folder,
// so no file may depend on it or cite it.
var workshopRef = regexp.MustCompile(`(^|[^A-Za-z0-9_-])(\.\./)*` + "shar" + `ed/`)

// TestRepositoryStandsAlone fails if any tracked file refers to a folder
// beside the repository: every test input lives under a testdata folder or
// interop/captures, every decision in docs/.
func TestRepositoryStandsAlone(t *testing.T) {
	files := trackedFiles(t)
	if len(files) < 100 {
		t.Fatalf("found only %d files to check", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // binary: a capture
		}
		for i, line := range strings.Split(string(b), "\n") {
			if workshopRef.MatchString(line) {
				t.Errorf("%s:%d refers to a folder outside the repository: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// trackedFiles lists the files git tracks, or, without git, every file
// under the repository except .git.
func trackedFiles(t *testing.T) []string {
	t.Helper()
	if out, err := exec.Command("git", "ls-files", "-z").Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			if _, err := os.Stat(f); err == nil {
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestWorkshopRefPattern checks the pattern catches the forms such a
// reference takes and leaves the ordinary word alone.
func TestWorkshopRefPattern(t *testing.T) {
	for _, s := range []string{"../" + "shar" + "ed/vectors/x", "see shar" + "ed/spec", "(shar" + "ed/DESIGN.md)"} {
		if !workshopRef.MatchString(s) {
			t.Errorf("%q not caught", s)
		}
	}
	for _, s := range []string{"a shared receive queue", "unshared/x", "shared-memory"} {
		if workshopRef.MatchString(s) {
			t.Errorf("%q caught", s)
		}
	}
}
