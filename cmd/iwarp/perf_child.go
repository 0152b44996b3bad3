package main

import (
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
)

// The measuring commands (perf, perf -perftest, benchfpdu) re-execute
// this program as the other end of a measurement, a process of its own.
// The child is selected by the IWARP_CHILD environment variable (not a
// flag, which -h would show users) with one of the roles below; test
// binaries check it in an init function to become the child.
const perfChildEnv = "IWARP_CHILD"

// The children's roles.
const (
	childPerfServer     = "perf-server"        // "perf": the server, on a free loopback port
	childPerftestServer = "perftest-server"    // "perf -perftest": our perftest server
	childBenchReceiver  = "benchfpdu-receiver" // "benchfpdu": the receiving end
)

// perfChildRole returns this process's child role, or "".
func perfChildRole() string { return os.Getenv(perfChildEnv) }

// isPerfChildRole reports whether role is one of the roles above.
func isPerfChildRole(role string) bool {
	return role == childPerfServer || role == childPerftestServer || role == childBenchReceiver
}

// perfChildCmd is this program re-executed with args in a child role. Its
// standard error is ours.
func perfChildCmd(role string, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), perfChildEnv+"="+role)
	cmd.Stderr = os.Stderr
	return cmd, nil
}

// startCPUProfile profiles this process into the file name until the
// returned function is called.
func startCPUProfile(name string) (func(), error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
