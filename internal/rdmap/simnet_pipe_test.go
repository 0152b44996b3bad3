package rdmap

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestSimPipe drives one pipe with random writes, reads and delays and
// checks what the simulation relies on: the octets come out in the order
// they went in, never before their delivery step, the capacity is never
// exceeded, and EOF comes after the last octet.
func TestSimPipe(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x5EED))
		capacity := 1 + rng.IntN(300)
		p := newSimPipe(capacity)
		var in, out []byte
		var due []int64 // delivery step of each octet written
		var now int64
		var closed bool
		for step := 0; step < 2000; step++ {
			now += int64(rng.IntN(2))
			switch rng.IntN(3) {
			case 0:
				if closed {
					continue
				}
				b := make([]byte, rng.IntN(64))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				delay := int64(rng.IntN(5))
				n, err := p.write(b, now, delay)
				if err != nil {
					t.Fatalf("seed %d: write: %v", seed, err)
				}
				if n > len(b) || p.queued() > capacity {
					t.Fatalf("seed %d: wrote %d of %d, %d queued, capacity %d", seed, n, len(b), p.queued(), capacity)
				}
				in = append(in, b[:n]...)
				for range n {
					at := now + delay
					if k := len(due); k > 0 && due[k-1] > at {
						at = due[k-1]
					}
					due = append(due, at)
				}
			case 1:
				dst := make([]byte, rng.IntN(80))
				n := p.readInto(dst, now)
				for i := range n {
					if due[len(out)+i] > now {
						t.Fatalf("seed %d: octet %d read at step %d, delivered at %d", seed, len(out)+i, now, due[len(out)+i])
					}
				}
				out = append(out, dst[:n]...)
				if n < len(dst) && len(out) < len(in) && due[len(out)] <= now {
					t.Fatalf("seed %d: read %d of %d with octet %d delivered", seed, n, len(dst), len(out))
				}
			case 2:
				if rng.IntN(50) == 0 && !closed {
					p.closeWrite(nil, now, int64(rng.IntN(5)))
					closed = true
				}
			}
			if eof, err := p.atEOF(now); eof && (len(out) != len(in) || err != nil) {
				t.Fatalf("seed %d: EOF (%v) after %d of %d octets", seed, err, len(out), len(in))
			}
		}
		if !bytes.Equal(out, in[:len(out)]) {
			t.Fatalf("seed %d: octets out of order", seed)
		}
	}
}

// TestSimPipeReset checks the close of the reading end: input it had not
// read makes the writer's next write fail, and so does a later write.
func TestSimPipeReset(t *testing.T) {
	p := newSimPipe(16)
	if n, err := p.write([]byte("abc"), 0, 0); n != 3 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if !p.closeRead() {
		t.Fatal("closeRead with 3 octets queued reported none unread")
	}
	if _, err := p.write([]byte("d"), 1, 0); !errors.Is(err, errSimReset) {
		t.Fatalf("write after a close with unread input: %v, want a reset", err)
	}
	q := newSimPipe(16)
	q.closeRead()
	if n, err := q.write([]byte("x"), 0, 0); n != 1 || err != nil {
		t.Fatalf("first write after a clean close: %d, %v (the reset is not back yet)", n, err)
	}
	if _, err := q.write([]byte("y"), 1, 0); !errors.Is(err, errSimReset) {
		t.Fatalf("second write after the reader closed: %v, want a reset", err)
	}
}
