package fpdu

import (
	"bytes"
	"io"
	"runtime"
	"testing"
)

// TestTryFlush: TryFlush never blocks; against a peer that does not read it
// eventually leaves FPDUs queued, and Flush then sends the rest in order so
// the receiver gets exactly what was appended.
func TestTryFlush(t *testing.T) {
	a, b := tcpPair(t)
	w := NewConn(a, Options{CRC: true}).Writer()
	hdr := make([]byte, 14)
	payload := bytes.Repeat([]byte{0x5a}, 60000)
	sent := 0
	partial := false
	for i := 0; i < 2000 && !partial; i++ {
		hdr[13] = byte(i)
		if err := w.Append(hdr, payload); err != nil {
			t.Fatal(err)
		}
		done, err := w.TryFlush()
		if err != nil {
			t.Fatal(err)
		}
		sent++
		partial = !done
	}
	if runtime.GOOS == "linux" && !partial {
		t.Fatal("TryFlush never left anything queued against a peer that does not read")
	}
	got := make(chan []byte, 1)
	go func() {
		r := NewConn(b, Options{CRC: true}).Reader()
		var seq []byte
		for i := 0; i < sent; i++ {
			n, err := r.Next()
			if err != nil {
				got <- nil
				return
			}
			u := make([]byte, n)
			if r.Read(u) != nil || r.End() != nil || !bytes.Equal(u[14:], payload) {
				got <- nil
				return
			}
			seq = append(seq, u[13])
		}
		got <- seq
	}()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	seq := <-got
	if len(seq) != sent {
		t.Fatalf("received %d FPDUs intact, sent %d", len(seq), sent)
	}
	for i, s := range seq {
		if s != byte(i) {
			t.Fatalf("FPDU %d out of order", i)
		}
	}
	if w.Buffered() != 0 {
		t.Fatal("bytes still queued")
	}
}

func TestTryFlushAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("race instrumentation allocates")
	}
	a, b := tcpPair(t)
	go func() { _, _ = io.Copy(io.Discard, b) }()
	w := NewConn(a, Options{CRC: true}).Writer()
	hdr := make([]byte, 14)
	payload := make([]byte, 4096)
	op := func() {
		if err := w.Append(hdr, payload); err != nil {
			panic(err)
		}
		if done, err := w.TryFlush(); err != nil {
			panic(err)
		} else if !done {
			if err := w.Flush(); err != nil {
				panic(err)
			}
		}
	}
	for i := 0; i < 100; i++ {
		op()
	}
	if n := testing.AllocsPerRun(500, op); n != 0 {
		t.Fatalf("%v allocations per TryFlush", n)
	}
}
