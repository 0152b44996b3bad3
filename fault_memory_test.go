package iwarp_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/goiwarp/iwarp"
)

// Memory helpers of the fault matrix: a shared random source, canary-filled
// buffers cut into ranges, and the checks of what a fault may leave in them.

const (
	faultPage = 4096
	// faultBig is the size of the large transfers a fault interrupts, and
	// faultCut how much of them crosses the proxy first: far more than
	// the socket buffers can hold remains, so the transfer cannot finish.
	faultBig = 64 << 20
	faultCut = 4 << 20
	// faultCanary fills every byte no successful work request wrote.
	faultCanary = 0xa5
)

// faultSource is faultBig random bytes, shared read-only by every cell.
var faultSource = sync.OnceValue(func() []byte {
	b := make([]byte, faultBig)
	_, _ = rand.NewChaCha8([32]byte{9}).Read(b)
	return b
})

// faultCanaries is faultBig canary bytes to compare against.
var faultCanaries = sync.OnceValue(func() []byte {
	return bytes.Repeat([]byte{faultCanary}, faultBig)
})

// canaryBuf is a canary-filled buffer laid out as named ranges, each
// preceded and followed by a canary page.
type canaryBuf struct {
	buf []byte
	off map[string]int
	len map[string]int
}

// newCanaryBuf lays out ranges of the given sizes (name, size, name, size...).
func newCanaryBuf(ranges ...any) *canaryBuf {
	cb := &canaryBuf{off: map[string]int{}, len: map[string]int{}}
	n := faultPage
	for i := 0; i < len(ranges); i += 2 {
		name, size := ranges[i].(string), ranges[i+1].(int)
		cb.off[name], cb.len[name] = n, size
		n += size + faultPage
	}
	cb.buf = make([]byte, n)
	for i := 0; i < n; i += faultBig {
		copy(cb.buf[i:], faultCanaries())
	}
	return cb
}

// sge is the SGE of range name in mr (registered over cb.buf).
func (cb *canaryBuf) sge(mr *iwarp.MR, name string) iwarp.SGE {
	return mr.SGE(cb.off[name], cb.len[name])
}

// remote is range name of mr for the peer.
func (cb *canaryBuf) remote(t *testing.T, mr *iwarp.MR, name string) iwarp.RemoteBuffer {
	t.Helper()
	rb, err := mr.RemoteSlice(cb.off[name], cb.len[name])
	if err != nil {
		t.Fatal(err)
	}
	return rb
}

// bytes returns range name.
func (cb *canaryBuf) bytes(name string) []byte {
	return cb.buf[cb.off[name] : cb.off[name]+cb.len[name]]
}

// checkRanges checks cb once no QP touches it any more: each range named
// in exact holds its want bytes, each range in partial holds a prefix of
// its want bytes of at most maxPlaced bytes and then canaries (placement
// is in order), and every other byte is still a canary.
func (cb *canaryBuf) checkRanges(t *testing.T, what string, exact, partial map[string][]byte, maxPlaced int) {
	t.Helper()
	pos := 0
	for pos < len(cb.buf) {
		name, start := "", len(cb.buf)
		for n, o := range cb.off {
			if o >= pos && o < start {
				name, start = n, o
			}
		}
		if i := mismatch(cb.buf[pos:start], faultCanaries()); i >= 0 {
			t.Errorf("%s: byte %d, outside every range, was overwritten", what, pos+i)
		}
		if name == "" {
			break
		}
		got := cb.bytes(name)
		switch {
		case exact[name] != nil:
			if i := mismatch(got, exact[name]); i >= 0 {
				t.Errorf("%s: range %s, of a successful work request, wrong at byte %d", what, name, i)
			}
		case partial[name] != nil:
			n := commonPrefix(got, partial[name])
			t.Logf("%s: range %s: %d of %d bytes placed before the fault", what, name, n, len(got))
			if n > maxPlaced {
				t.Errorf("%s: range %s has %d bytes placed, more than the %d that crossed the proxy", what, name, n, maxPlaced)
			}
			if i := mismatch(got[n:], faultCanaries()); i >= 0 {
				t.Errorf("%s: range %s, of an interrupted transfer, has %d correct bytes then a wrong one at byte %d", what, name, n, n+i)
			}
		default:
			if i := mismatch(got, faultCanaries()); i >= 0 {
				t.Errorf("%s: range %s, of a flushed work request, was written at byte %d", what, name, i)
			}
		}
		pos = start + len(got)
	}
}

// mismatch returns the first index where got differs from the
// corresponding byte of want (len(want) >= len(got)), or -1.
func mismatch(got, want []byte) int {
	n := commonPrefix(got, want)
	if n == len(got) {
		return -1
	}
	return n
}

// commonPrefix is the length of the common prefix of got and want[:len(got)].
func commonPrefix(got, want []byte) int {
	const step = 64 << 10
	n := 0
	for n < len(got) {
		m := min(step, len(got)-n)
		if !bytes.Equal(got[n:n+m], want[n:n+m]) {
			break
		}
		n += m
	}
	for n < len(got) && got[n] == want[n] {
		n++
	}
	return n
}

// roundTrip checks that a connected pair carries a Write and a Read.
func roundTrip(t *testing.T, ctx context.Context, a, b *endpoint) {
	t.Helper()
	src := faultSource()[:faultPage]
	smr, err := a.pd.RegisterMemory(src, 0)
	if err != nil {
		t.Fatal(err)
	}
	target := make([]byte, faultPage)
	tmr, err := b.pd.RegisterMemory(target, iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	back := make([]byte, faultPage)
	bmr, err := a.pd.RegisterMemory(back, iwarp.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Write(ctx, tmr.Remote(), smr.SGE(0, faultPage)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Read(ctx, tmr.Remote(), bmr.SGE(0, faultPage)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, src) {
		t.Fatal("Write then Read did not round-trip")
	}
}
