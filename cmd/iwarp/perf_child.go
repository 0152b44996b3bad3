package main

import (
	"os"
	"os/exec"
	"runtime/pprof"
)

// perfChildEnv marks the re-executed all-in-one server; test binaries
// check it in an init function to become the server without going through
// main.
const perfChildEnv = "IWARP_PERF_CHILD"

// startPerfChild re-executes this program as the perf server ("perf
// -child") on loopback and returns its "IWARP-ADDR TCP-ADDR" line and a
// function that stops it (by closing its standard input). With
// cpuProfile the child writes its CPU profile to cpuProfile.server.
func startPerfChild(cpuProfile string) (string, func(), error) {
	cmd, err := perfChildCmd("-child", "-cpuprofile", cpuProfile)
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	return startChild(cmd)
}

// perfChildCmd is this program re-executed as "perf ARGS..." in a child
// role (marked by perfChildEnv, so that a test binary becomes the child).
func perfChildCmd(args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{"perf"}, args...)...)
	cmd.Env = append(os.Environ(), perfChildEnv+"=1")
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
