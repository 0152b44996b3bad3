package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// perfChildEnv marks the re-executed all-in-one server; test binaries
// check it in an init function to become the server without going through
// main.
const perfChildEnv = "IWARP_PERF_CHILD"

// startPerfChild re-executes this program as the perf server ("perf
// -child") on loopback and returns its "IWARP-ADDR TCP-ADDR" line and a
// function that stops it (by closing its standard input).
func startPerfChild() (string, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(exe, "perf", "-child")
	cmd.Env = append(os.Environ(), perfChildEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		in.Close()
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("perf server child did not start: %v", err)
	}
	return strings.TrimSpace(line), stop, nil
}
