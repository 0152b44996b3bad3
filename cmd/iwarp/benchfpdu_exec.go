package main

import (
	"os"
	"os/exec"
)

// newBenchChildCmd returns the command that re-executes exe as the
// benchfpdu receiving child: "benchfpdu -child", marked in the
// environment so that a test binary recognizes it too.
func newBenchChildCmd(exe string) *exec.Cmd {
	cmd := exec.Command(exe, "benchfpdu", "-child")
	cmd.Env = append(os.Environ(), benchChildEnv+"=1")
	cmd.Stderr = os.Stderr
	return cmd
}
