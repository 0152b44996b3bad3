package iwarp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTutorialRuns extracts each program of docs/tutorial.md (a Go block
// followed by the output it prints), runs it against this checkout and
// compares its output with the one the tutorial shows, so the tutorial
// cannot drift from the API.
func TestTutorialRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	doc, err := os.ReadFile("docs/tutorial.md")
	if err != nil {
		t.Fatal(err)
	}
	progs := regexp.MustCompile("(?s)```go\n(.*?)```\n+Output:\n\n```\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(progs) == 0 || len(progs) != strings.Count(string(doc), "```go\n") {
		t.Fatalf("tutorial: %d programs with an output, of %d Go blocks", len(progs), strings.Count(string(doc), "```go\n"))
	}
	repo, _ := filepath.Abs(".")
	for i, p := range progs {
		t.Run(fmt.Sprint("program", i+1), func(t *testing.T) {
			dir := t.TempDir()
			mod := "module tutorial\n\ngo 1.26\n\nrequire github.com/goiwarp/iwarp v0.0.0\n\nreplace github.com/goiwarp/iwarp => " + repo + "\n"
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), p[1], 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("go", "run", ".")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("tutorial program %d: %v\n%s", i+1, err, out)
			}
			if strings.TrimSpace(string(out)) != strings.TrimSpace(string(p[2])) {
				t.Fatalf("tutorial program %d output\n%s\nwant\n%s", i+1, out, p[2])
			}
		})
	}
}
