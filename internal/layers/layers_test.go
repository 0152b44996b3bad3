// Package layers holds the architecture tripwire: a test that the protocol
// packages depend on each other downwards only, and that the core stays
// standard-library only.
package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/goiwarp/iwarp"

// rank orders the packages of the module from the bottom of the stack up. A
// package may import only packages of a strictly lower rank. Tool packages
// (capture, decode) sit beside the stack: they may import the protocol
// packages, and nothing in the stack may import them.
var rank = map[string]int{
	"rdma":               -1, // the shared vocabulary (opcodes, statuses, Terminate codes): standard library only
	"internal/wire":      0,
	"internal/crc32c":    0, // the MPA CRC (amd64 assembly beside hash/crc32): standard library only
	"internal/freelist":  0, // bounded free lists of the hot paths' buffers: standard library only
	"internal/fpdu":      1,
	"internal/poll":      1, // the per-Device epoll poller of the engine's shell: standard library only
	"internal/pcapwrite": 1, // capture writer of the public API: standard library only
	"internal/mpa":       2,
	"internal/ddp":       3,
	"internal/mem":       3,
	"internal/rdmap":     4,
	"internal/verbs":     5, // the engine's shell: QP, CQ, SRQ around internal/rdmap
	"":                   6, // the root package: the public verbs API
	"internal/nvme":      0, // NVMe and NVMe-oF wire formats: standard library only
	"nvmeof":             7, // NVMe over Fabrics: what the target and the host share
	"nvmeof/target":      8, // the NVMe-oF target on the public API
	"nvmeof/host":        8, // the NVMe-oF host on the public API
	"internal/capture":   10,
	"internal/decode":    11,
	"internal/conform":   12, // the hostile-peer suite: `iwarp conform` and the root tests
	"internal/bench":     13, // what the measuring harnesses share
	"internal/fpdubench": 14, // `iwarp benchfpdu`: the FPDU stream against raw TCP
	"internal/perf":      14, // `iwarp perf`: the measurement harness and its reports
	"internal/perftest":  14, // perftest 4.5's protocol: `iwarp perf -perftest`
	"internal/rping":     13, // rdma-core's rping protocol: `iwarp rping`
	"internal/rdmaxchg":  13, // librdmacm's rdma_server/rdma_client exchange
	"internal/layers":    20,
	"internal/leakcheck": 20,
	"internal/testnet":   20,
	"internal/vectors":   20, // test support: reads internal/vectors/testdata
	"internal/nvmetest":  20, // test support: an nvmeof/target on loopback
	"cmd/iwarp":          30,
	"interop":            30, // tests of the interop harness's own logic
}

// rankOf returns a package's rank; the examples rank with the CLI.
func rankOf(name string) (int, bool) {
	if strings.HasPrefix(name, "examples/") {
		return rank["cmd/iwarp"], true
	}
	r, ok := rank[name]
	return r, ok
}

// modulesAllowed are the packages beside the stack that may import modules
// outside the standard library (the core never may): the chart of
// internal/perf draws its text with golang.org/x/image's font.
var modulesAllowed = map[string]bool{"internal/perf": true}

// toolOnly are the packages that only tools may import.
var toolOnly = map[string]bool{"internal/capture": true, "internal/decode": true, "internal/conform": true}

type pkg struct {
	path    string
	imports []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imps, _ := strings.Cut(line, ":")
		pkgs = append(pkgs, pkg{path: path, imports: strings.Fields(imps)})
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// violations returns one message per import that breaks the layering.
func violations(pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		name, _ := rel(p.path)
		r, ok := rankOf(name)
		if !ok {
			bad = append(bad, "package "+p.path+" has no rank in layers_test.go: add it to the table")
			continue
		}
		for _, imp := range p.imports {
			in, mine := rel(imp)
			if !mine {
				if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") && !strings.HasPrefix(name, "cmd/") && !modulesAllowed[name] {
					bad = append(bad, p.path+" imports "+imp+": the core is standard library only")
				}
				continue
			}
			ir, ok := rankOf(in)
			if !ok {
				continue // reported as a package of its own
			}
			if ir >= r {
				bad = append(bad, p.path+" imports "+imp+": dependencies must point down")
			}
			if toolOnly[in] && r < rank["internal/capture"] {
				bad = append(bad, p.path+" imports the tool package "+imp)
			}
		}
	}
	return bad
}

func TestDependenciesPointDown(t *testing.T) {
	for _, v := range violations(listPackages(t)) {
		t.Error(v)
	}
}

// TestViolationsDetected makes sure the check itself can fail.
func TestViolationsDetected(t *testing.T) {
	cases := []pkg{
		{path: module + "/internal/wire", imports: []string{module + "/internal/mpa"}},
		{path: module + "/internal/mpa", imports: []string{module + "/internal/decode"}},
		{path: module + "/internal/fpdu", imports: []string{"golang.org/x/sys/unix"}},
		{path: module + "/internal/perftest", imports: []string{"golang.org/x/image/font"}},
		{path: module + "/internal/perf", imports: []string{module + "/internal/perftest"}},
		{path: module + "/internal/nowhere"},
	}
	for _, c := range cases {
		if v := violations([]pkg{c}); len(v) == 0 {
			t.Errorf("no violation reported for %s importing %v", c.path, c.imports)
		}
	}
	ok := []pkg{
		{path: module + "/internal/mpa", imports: []string{module + "/internal/wire", "net"}},
		{path: module + "/cmd/iwarp", imports: []string{module + "/internal/decode", "example.com/lib"}},
		{path: module + "/internal/perf", imports: []string{module + "/internal/bench", "golang.org/x/image/font"}},
	}
	if v := violations(ok); len(v) != 0 {
		t.Errorf("false violations: %v", v)
	}
}
