package rdmap

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden are the packages the protocol core may not import: it does no
// I/O, reads no clock, takes no lock and starts no goroutine of its own
// (docs/engine-rebuild.md).
var forbidden = map[string]bool{
	"net": true, "os": true, "time": true, "sync": true, "sync/atomic": true, "runtime": true,
	"syscall": true, "context": true, "reflect": true, "unsafe": true,
}

// TestImports fails if a non-test file of the package imports a forbidden
// package, or anything outside the standard library but rdma, internal/wire,
// internal/fpdu and internal/mem.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case forbidden[path]:
				t.Errorf("%s imports %s", name, path)
			case strings.Contains(strings.SplitN(path, "/", 2)[0], "."):
				switch path {
				case "github.com/goiwarp/iwarp/internal/wire", "github.com/goiwarp/iwarp/internal/fpdu", "github.com/goiwarp/iwarp/internal/mem", "github.com/goiwarp/iwarp/rdma":
				default:
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}
