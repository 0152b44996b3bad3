package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// clientEnv, when set, makes the test binary act as the example's binary:
// the demo re-executes os.Executable (here the test binary) with -connect.
const clientEnv = "IWARP_COUNTER_EXAMPLE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(clientEnv) == "1" {
		if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "counter client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCounterProcesses is the multi-process integration test of RFC 7306
// atomics: two client processes each do 1000 FetchAdds and 1000
// CompareSwap-locked read-modify-write rounds on the server's memory, and
// both counters end exactly at the sums.
func TestCounterProcesses(t *testing.T) {
	t.Setenv(clientEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const clients, n = 2, 1000
	counter, guarded, err := demo(ctx, clients, n)
	if err != nil {
		t.Fatal(err)
	}
	if counter != clients*n || guarded != clients*n {
		t.Fatalf("FetchAdd counter %d, guarded counter %d, want %d each", counter, guarded, clients*n)
	}
}

// TestCounterRun runs the command line of the demo with small numbers and
// checks its summary line.
func TestCounterRun(t *testing.T) {
	t.Setenv(clientEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, []string{"-clients", "3", "-n", "50"}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "3 clients × 50: FetchAdd counter 150, lock-guarded counter 150"; !strings.Contains(out.String(), want) {
		t.Fatalf("output %q, want it to contain %q", out.String(), want)
	}
}

// TestCounterServeAndConnect runs the -serve mode in-process and one
// -connect client in-process against it.
func TestCounterServeAndConnect(t *testing.T) {
	s, err := startServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, []string{"-connect", s.ln.Addr().String(), "-n", "20"}, os.Stdout); err != nil {
		t.Fatal(err)
	}
	if counter, guarded := s.counts(); counter != 20 || guarded != 20 {
		t.Fatalf("counters %d, %d, want 20 each", counter, guarded)
	}
}

// TestFlags: -h prints the usage to standard output and exits 0; a wrong
// flag or value exits 2 naming it, before anything runs; a failed run
// exits 1.
func TestFlags(t *testing.T) {
	if code := exitStatus(errors.New("it broke"), io.Discard, io.Discard); code != 1 {
		t.Errorf("a failed run: exit %d, want 1", code)
	}
	for _, c := range []struct {
		args []string
		code int
		want string // in standard output for -h, else in standard error
	}{
		{[]string{"-h"}, 0, "-clients"},
		{[]string{"-x"}, 2, "flag provided but not defined: -x"},
		{[]string{"-n", "-1"}, 2, "-n -1: must be between 0 and 100000000"},
		{[]string{"-clients", "0"}, 2, "-clients 0: must be between 1 and 64"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
	} {
		var outb, errb bytes.Buffer
		code := exitStatus(run(context.Background(), c.args, &outb), &outb, &errb)
		out, errOut := outb.String(), errb.String()
		if got := map[bool]string{true: out, false: errOut}[code == 0]; code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("%v: exit %d, want %d; stdout %q, stderr %q", c.args, code, c.code, out, errOut)
		}
	}
}
