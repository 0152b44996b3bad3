package target

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFileBackend: reads, writes, zeroing (by hole or by zeros) and the
// size of a file.
func TestFileBackend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "disk")
	if err := os.WriteFile(path, bytes.Repeat([]byte{0xAB}, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := OpenFileBackend(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Size() != 1<<20 {
		t.Fatalf("size %d", b.Size())
	}
	if _, err := b.WriteAt([]byte("hello"), 4096); err != nil {
		t.Fatal(err)
	}
	if err := b.Zero(8192, 64<<10); err != nil {
		t.Fatal(err)
	}
	if err := writeZeros(b, 200<<10, 100<<10); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 1<<20)
	if _, err := b.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{0xAB}, 1<<20)
	copy(want[4096:], "hello")
	clear(want[8192 : 8192+64<<10])
	clear(want[200<<10 : 300<<10])
	if !bytes.Equal(got, want) {
		t.Error("the file does not hold what was written and zeroed")
	}
	if err := b.Zero(1<<20-10, 20); !errors.Is(err, errOutOfRange) {
		t.Errorf("Zero past the end: %v", err)
	}
	if _, err := OpenFileBackend(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("opened a file that does not exist")
	}
}

// TestMemoryBackend: bounds and zeroing.
func TestMemoryBackend(t *testing.T) {
	if _, err := NewMemoryBackend(0); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("size 0: %v", err)
	}
	m, _ := NewMemoryBackend(4096)
	if _, err := m.WriteAt(make([]byte, 10), 4090); !errors.Is(err, errOutOfRange) {
		t.Errorf("write past the end: %v", err)
	}
	if _, err := m.ReadAt(make([]byte, 10), 5000); !errors.Is(err, errOutOfRange) {
		t.Errorf("read past the end: %v", err)
	}
	m.WriteAt([]byte{1, 2, 3, 4}, 0)
	if err := zeroRange(m, 1, 2); err != nil || !bytes.Equal(m.buf[:4], []byte{1, 0, 0, 4}) {
		t.Errorf("zeroRange: %v %v", err, m.buf[:4])
	}
}

// TestConfig: New refuses what it cannot serve.
func TestConfig(t *testing.T) {
	be, _ := NewMemoryBackend(1 << 20)
	small, _ := NewMemoryBackend(100)
	for _, c := range []Config{
		{Backend: be},
		{NQN: "nqn.2014-08.org.nvmexpress.discovery", Backend: be},
		{NQN: testNQN},
		{NQN: testNQN, Backend: small},
		{NQN: testNQN, Backend: be, BlockSize: 1024},
		{NQN: testNQN, Backend: be, MaxIOQueues: MaxIOQueues + 1},
		{NQN: testNQN, Backend: be, QueueDepth: 1},
		{NQN: testNQN, Backend: be, QueueDepth: MaxQueueDepth + 1},
		{NQN: testNQN, Backend: be, InlineDataSize: MaxInlineDataSize + 16},
		{NQN: testNQN, Backend: be, MaxTransfer: 3 * 4096},
		{NQN: testNQN, Backend: be, MaxTransfer: 2 * MaxTransfer},
		{NQN: testNQN, Backend: be, SerialNumber: "é"},
		{NQN: testNQN, Backend: be, ModelNumber: string(make([]byte, 41))},
	} {
		if _, err := New(&c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if _, err := New(nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil: %v", err)
	}
	tg, err := New(&Config{NQN: testNQN, Backend: be, BlockSize: 4096, InlineDataSize: -1, MaxTransfer: MaxTransfer})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.s.blocks != 256 || tg.s.inline != 0 || tg.s.mdts != 8 || tg.NQN() != testNQN {
		t.Errorf("settings %+v", tg.s)
	}
}
