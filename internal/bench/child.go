package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Child is the process on the other end of a measurement: the tool
// re-executed in a child role. It prints one line first (its address),
// and stops when its standard input closes (see UntilEOF).
type Child struct {
	// Line is the first line the child printed, without spaces around.
	Line string
	// Exited is closed once the child closed its standard output (it
	// exited, or is about to).
	Exited <-chan struct{}
	cmd    *exec.Cmd
	stdin  io.Closer
}

// StartChild starts cmd, reads the first line it prints and copies the
// rest of its standard output to rest (nil: discarded).
func StartChild(cmd *exec.Cmd, rest io.Writer) (*Child, error) {
	if rest == nil {
		rest = io.Discard
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil {
		in.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("child %s did not start: %v", strings.Join(cmd.Args[1:], " "), err)
	}
	exited := make(chan struct{})
	go func() {
		_, _ = io.Copy(rest, br)
		close(exited)
	}()
	return &Child{Line: strings.TrimSpace(line), Exited: exited, cmd: cmd, stdin: in}, nil
}

// Stop closes the child's standard input, which tells it to stop, and
// waits for it to exit. It returns the child's exit error, if any.
func (c *Child) Stop() error {
	c.stdin.Close()
	<-c.Exited
	return c.cmd.Wait()
}

// UntilEOF returns a context that ends with ctx or when r (a child's
// standard input) reaches its end or fails: how a child learns that its
// parent is done with it.
func UntilEOF(ctx context.Context, r io.Reader) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, r)
		cancel()
	}()
	return ctx, cancel
}
