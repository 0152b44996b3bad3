package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestOneSided runs the example: the greeting, Write and Read back, every
// key found, misses not found, and the server seeing the client's bytes.
func TestOneSided(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, nil, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`RDMA Read of the shared buffer: "hello from the server"`,
		"Wrote 1024 bytes and Read them back intact",
		"found all 40 keys",
		`"nothing" is not in the table`,
		"holds the client's 1024 bytes",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestOneSidedFullTable: a table with one empty bucket left makes lookups
// probe through long collision chains, and misses stop at that bucket.
func TestOneSidedFullTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, []string{"-keys", "15", "-buckets", "16"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "found all 15 keys") {
		t.Fatalf("output:\n%s", out.String())
	}
	if err := run(ctx, []string{"-keys", "16", "-buckets", "16"}, &out); err == nil {
		t.Fatal("a table without an empty bucket was accepted")
	}
}

// TestBuildTable: every key sits in its home bucket or after a run of
// occupied buckets following it, as the lookup's probe expects.
func TestBuildTable(t *testing.T) {
	const keys, buckets = 30, 32
	table, err := buildTable(keys, buckets)
	if err != nil {
		t.Fatal(err)
	}
	used := 0
	for b := 0; b < buckets; b++ {
		e := table[b*entrySize:][:entrySize]
		if e[0] == 0 {
			continue
		}
		used++
		key := string(e[keyOff : keyOff+int(e[0])])
		for h := bucket(key, buckets); h != b; h = (h + 1) % buckets {
			if table[h*entrySize] == 0 {
				t.Fatalf("%s in bucket %d, but bucket %d before it is empty", key, b, h)
			}
		}
	}
	if used != keys {
		t.Fatalf("%d buckets used, want %d", used, keys)
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
		{[]string{"-h"}, 0, "-buckets"},
		{[]string{"-x"}, 2, "flag provided but not defined: -x"},
		{[]string{"-keys", "-1"}, 2, "-keys -1: must not be negative"},
		{[]string{"-keys", "8", "-buckets", "8"}, 2, "-buckets 8: must be more than -keys (8)"},
	} {
		var outb, errb bytes.Buffer
		code := exitStatus(run(context.Background(), c.args, &outb), &outb, &errb)
		out, errOut := outb.String(), errb.String()
		if got := map[bool]string{true: out, false: errOut}[code == 0]; code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("%v: exit %d, want %d; stdout %q, stderr %q", c.args, code, c.code, out, errOut)
		}
	}
}
