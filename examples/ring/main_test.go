package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestRing sends messages of every length through small rings, including
// a ring of one slot and acknowledgements of one credit, so that the
// sender keeps running out of credits; every payload and the order are
// checked by the receiver.
func TestRing(t *testing.T) {
	for _, cfg := range []config{
		{slots: 16, slotSize: 256, messages: 2000, batch: 4},
		{slots: 1, slotSize: 8, messages: 200, batch: 1},
		{slots: 5, slotSize: 4096, messages: 300, batch: 2},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, err := loopback(ctx, cfg)
		cancel()
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		if st.messages != cfg.messages {
			t.Fatalf("%+v: %d messages", cfg, st.messages)
		}
		// Every message was acknowledged: full batches plus a final partial one.
		if want := (cfg.messages + cfg.batch - 1) / cfg.batch; st.creditMsgs != want {
			t.Fatalf("%+v: %d credit messages, want %d", cfg, st.creditMsgs, want)
		}
	}
}

// TestRingShape: a sender configured for another ring than the one the
// receiver advertises (QP.PeerMemory) refuses it before sending, and the
// receiver sees the connection end.
func TestRingShape(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	recvErr := make(chan error, 1)
	go func() {
		_, err := receive(ctx, ln, config{slots: 8, slotSize: 64, messages: 10, batch: 2})
		recvErr <- err
	}()
	_, err = send(ctx, ln.Addr().String(), config{slots: 16, slotSize: 64, messages: 10, batch: 2})
	if err == nil || !strings.Contains(err.Error(), "not 16 slots of 64 bytes") {
		t.Fatalf("sender: %v, want it to refuse a ring of 8 slots", err)
	}
	if err := <-recvErr; err == nil {
		t.Fatal("the receiver saw no error")
	}
}

// TestRingRun runs the command line with fewer messages.
func TestRingRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, []string{"-n", "1000", "-slots", "8", "-size", "64"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1000 messages") || !strings.Contains(out.String(), "verified") {
		t.Fatalf("output %q", out.String())
	}
	if err := run(ctx, []string{"-size", "4"}, &out); err == nil {
		t.Fatal("a slot size below 8 was accepted")
	}
}

// TestCheckMessage: the receiver's check rejects a wrong sequence number,
// length or byte.
func TestCheckMessage(t *testing.T) {
	buf := make([]byte, 64)
	p := message(buf, 41)
	if err := checkMessage(p, 41, 64); err != nil {
		t.Fatal(err)
	}
	if err := checkMessage(p, 42, 64); err == nil {
		t.Fatal("wrong sequence number accepted")
	}
	if err := checkMessage(p[:len(p)-1], 41, 64); err == nil {
		t.Fatal("short message accepted")
	}
	p[len(p)-1]++
	if err := checkMessage(p, 41, 64); err == nil {
		t.Fatal("corrupt byte accepted")
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
		{[]string{"-h"}, 0, "-slots"},
		{[]string{"-x"}, 2, "flag provided but not defined: -x"},
		{[]string{"-size", "4"}, 2, "-size 4: must be between 8 and 1048576"},
		{[]string{"-slots", "4", "-batch", "5"}, 2, "-batch 5: must be between 1 and -slots (4)"},
		{[]string{"-n", "-1"}, 2, "-n -1: must not be negative"},
	} {
		var outb, errb bytes.Buffer
		code := exitStatus(run(context.Background(), c.args, &outb), &outb, &errb)
		out, errOut := outb.String(), errb.String()
		if got := map[bool]string{true: out, false: errOut}[code == 0]; code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("%v: exit %d, want %d; stdout %q, stderr %q", c.args, code, c.code, out, errOut)
		}
	}
}
