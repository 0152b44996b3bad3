package fpdu

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// TestTryFlushIgnoresExpiredWriteDeadline: a write deadline that passed
// (set for an earlier blocking Flush) makes TryFlush report "not done",
// never an error, and the next Flush with a fresh deadline sends the
// bytes. (Regression: TryFlush failed with "i/o timeout", which killed a QP
// that sent only small messages for longer than its operation timeout.)
func TestTryFlushIgnoresExpiredWriteDeadline(t *testing.T) {
	a, b := tcpPair(t)
	w := NewConn(a, Options{CRC: true}).Writer()
	if err := a.SetWriteDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 14)
	payload := bytes.Repeat([]byte{0x5a}, 100)
	if err := w.Append(hdr, payload); err != nil {
		t.Fatal(err)
	}
	if _, err := w.TryFlush(); err != nil {
		t.Fatalf("TryFlush after the write deadline passed: %v", err)
	}
	if err := a.SetWriteDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	a.Close()
	got, err := io.ReadAll(b)
	if err != nil || len(got) == 0 {
		t.Fatalf("peer read %d bytes, %v", len(got), err)
	}
}
