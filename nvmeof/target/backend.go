package target

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Backend is the storage behind a namespace: its bytes at byte offsets
// from 0 to Size. The target calls ReadAt and WriteAt from the goroutines
// of several queues at once, on whole blocks inside Size; commands that
// overlap may run in any order, as NVMe allows (NVMe Base 1.4 §6.3).
type Backend interface {
	io.ReaderAt
	io.WriterAt
	// Size returns the number of bytes; it must not change while the
	// Target serves.
	Size() int64
	// Flush makes the bytes written so far durable (Flush command,
	// NVMe Base 1.4 §6.8).
	Flush() error
}

// Zeroer is implemented by backends that can make a range read as zeros
// faster than writing zeros into it (a file's holes, say). The target
// uses it for Write Zeroes and for Dataset Management's deallocate; a
// Backend without it gets zeros written.
type Zeroer interface {
	// Zero makes n bytes from off read as zeros.
	Zero(off, n int64) error
}

// errOutOfRange is a backend access outside its size (the target checks
// LBA ranges first, so only a wrong Backend implementation meets it).
var errOutOfRange = errors.New("nvmeof: backend access out of range")

// MemoryBackend is a Backend in memory. Its methods are safe for
// concurrent use.
type MemoryBackend struct {
	mu  sync.RWMutex // guards buf's bytes: readers share, writers exclude
	buf []byte
}

// NewMemoryBackend returns a zeroed in-memory Backend of size bytes.
func NewMemoryBackend(size int64) (*MemoryBackend, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, fmt.Errorf("%w: memory backend size %d", ErrInvalidConfig, size)
	}
	return &MemoryBackend{buf: make([]byte, size)}, nil
}

// Size returns the size in bytes.
func (m *MemoryBackend) Size() int64 { return int64(len(m.buf)) }

// ReadAt copies len(p) bytes from off into p.
func (m *MemoryBackend) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m.buf)) {
		return 0, errOutOfRange
	}
	m.mu.RLock()
	n := copy(p, m.buf[off:])
	m.mu.RUnlock()
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt copies p into the backend at off.
func (m *MemoryBackend) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m.buf)) || int64(len(p)) > int64(len(m.buf))-off {
		return 0, errOutOfRange
	}
	m.mu.Lock()
	copy(m.buf[off:], p)
	m.mu.Unlock()
	return len(p), nil
}

// Zero clears n bytes from off.
func (m *MemoryBackend) Zero(off, n int64) error {
	if off < 0 || n < 0 || off > int64(len(m.buf)) || n > int64(len(m.buf))-off {
		return errOutOfRange
	}
	m.mu.Lock()
	clear(m.buf[off : off+n])
	m.mu.Unlock()
	return nil
}

// Flush does nothing: memory is as durable as it gets.
func (m *MemoryBackend) Flush() error { return nil }

// FileBackend is a Backend on a file or a block device. Its methods are
// safe for concurrent use (they are those of *os.File).
type FileBackend struct {
	f    *os.File
	size int64
}

// OpenFileBackend opens an existing file (or block device) for reading
// and writing; its size is the namespace's. Close it after the Target.
func OpenFileBackend(path string) (*FileBackend, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("nvmeof: %w", err)
	}
	// Seek works for block devices, whose Stat size is 0.
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("nvmeof: %s: %w", path, err)
	}
	return &FileBackend{f: f, size: size}, nil
}

// Size returns the file's size when it was opened.
func (b *FileBackend) Size() int64 { return b.size }

// ReadAt reads from the file.
func (b *FileBackend) ReadAt(p []byte, off int64) (int, error) { return b.f.ReadAt(p, off) }

// WriteAt writes to the file.
func (b *FileBackend) WriteAt(p []byte, off int64) (int, error) { return b.f.WriteAt(p, off) }

// Flush syncs the file.
func (b *FileBackend) Flush() error { return b.f.Sync() }

// Zero makes n bytes from off read as zeros: it punches a hole where the
// system and file system can (Linux's fallocate), and writes zeros
// otherwise.
func (b *FileBackend) Zero(off, n int64) error {
	if off < 0 || n < 0 || off > b.size || n > b.size-off {
		return errOutOfRange
	}
	if punchHole(b.f, off, n) == nil {
		return nil
	}
	return writeZeros(b.f, off, n)
}

// Close closes the file.
func (b *FileBackend) Close() error { return b.f.Close() }

// zeroChunk is what writeZeros writes from (never written to).
var zeroChunk = make([]byte, 64<<10)

// writeZeros writes n zero bytes at off of w.
func writeZeros(w io.WriterAt, off, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeroChunk)))
		if _, err := w.WriteAt(zeroChunk[:k], off); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}

// zeroRange makes n bytes from off of b read as zeros.
func zeroRange(b Backend, off, n int64) error {
	if z, ok := b.(Zeroer); ok {
		return z.Zero(off, n)
	}
	return writeZeros(b, off, n)
}
