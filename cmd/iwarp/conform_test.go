package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestConformInProcess: without -a, `iwarp conform` runs against an
// in-process `iwarp serve`; every selected case passes, each prints what
// the spec prescribes and what the responder did, and the summary line
// counts them.
func TestConformInProcess(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runConform([]string{"-run", "Tagged/|Startup/wrong-key|Read/IRD|Framing/wrong-CRC", "-v"}, &out, &errOut)
	s := out.String()
	if code != 0 || !strings.Contains(s, "CONFORM: 12 passed, 0 failed, 0 skipped") {
		t.Fatalf("exit %d\n%s\n%s", code, s, errOut.String())
	}
	for _, want := range []string{"PASS Tagged/Write-past-end/DDP-1-0x01", "prescribed: Terminate DDP-1-0x01", "observed:   Terminate DDP-1-0x01",
		"bytes:      exactly as RFC 5040 §4.8 builds them", "spec:       RFC 5041 §7.2", "received:   41 87"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
}

// TestConformBadFlags: a bad -run pattern is a usage error.
func TestConformBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runConform([]string{"-run", "("}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d", code)
	}
}
