package iwarp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTutorialRuns extracts the program of docs/tutorial.md, runs it
// against this checkout and compares its output with the one the tutorial
// shows, so the tutorial cannot drift from the API.
func TestTutorialRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	doc, err := os.ReadFile("docs/tutorial.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(doc)
	outs := regexp.MustCompile("(?s)Output:\n\n```\n(.*?)```").FindSubmatch(doc)
	if blocks == nil || outs == nil {
		t.Fatal("tutorial program or output not found")
	}
	repo, _ := filepath.Abs(".")
	dir := t.TempDir()
	mod := "module tutorial\n\ngo 1.26\n\nrequire github.com/goiwarp/iwarp v0.0.0\n\nreplace github.com/goiwarp/iwarp => " + repo + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), blocks[1], 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tutorial program: %v\n%s", err, out)
	}
	if strings.TrimSpace(string(out)) != strings.TrimSpace(string(outs[1])) {
		t.Fatalf("tutorial output\n%s\nwant\n%s", out, outs[1])
	}
}
