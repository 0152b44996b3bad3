package mem

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
)

// Errors of the local memory API.
var (
	ErrTableFull     = errors.New("STag table full")
	ErrEmptyBuffer   = errors.New("cannot register an empty buffer")
	ErrBadAccess     = errors.New("unknown access flags")
	ErrDeregistered  = errors.New("region is deregistered")
	ErrBaseOverflow  = errors.New("base + length wraps 2^64")
	ErrAtomicAligned = errors.New("remote atomic access needs an 8-byte aligned base address and TO")
)

const shards = 256

// Table is the STag table of one device: the set of registered regions, all
// protection domains together. Indices are random over the 24-bit space and
// keys are random per registration and re-key, so STags are hard to guess
// (RFC 5042 §5.1); a freed index is not reused while it is among the last
// Quarantine freed ones.
//
// Concurrency: lookups read the shards' copy-on-write maps with one atomic
// load and take no lock; mu serialises registration and deregistration.
type Table struct {
	shards [shards]atomic.Pointer[map[uint32]*Region]

	mu         sync.Mutex
	count      int             // guarded by mu: registered regions
	windows    int             // guarded by mu: allocated memory windows
	quarantine []uint32        // guarded by mu: recently freed indices, a ring
	qnext      int             // guarded by mu
	qset       map[uint32]bool // guarded by mu
	limit      int
	random     func() uint32
}

// Quarantine is how many recently freed indices are kept from reuse.
const Quarantine = 1 << 16

// TableOptions configure NewTable.
type TableOptions struct {
	// MaxRegions bounds the number of registered regions and allocated
	// memory windows together (each takes a table index); 0 means 1<<20.
	MaxRegions int
	// Random supplies randomness for indices and keys; nil means crypto/rand.
	// Tests inject a deterministic source for byte-stable transcripts.
	Random func() uint32
}

// NewTable returns an empty STag table.
func NewTable(opts TableOptions) *Table {
	t := &Table{limit: opts.MaxRegions, random: opts.Random, qset: make(map[uint32]bool)}
	if t.limit <= 0 {
		t.limit = 1 << 20
	}
	if t.random == nil {
		t.random = cryptoRandom
	}
	for i := range t.shards {
		m := map[uint32]*Region{}
		t.shards[i].Store(&m)
	}
	return t
}

func cryptoRandom() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:])
}

func (t *Table) shard(index uint32) *atomic.Pointer[map[uint32]*Region] {
	return &t.shards[index%shards]
}

func (t *Table) lookup(index uint32) *Region {
	return (*t.shard(index).Load())[index]
}

// Register registers buf under a new STag in protection domain pd with the
// given access rights; base is the tagged offset of buf[0]. The caller keeps
// buf and must not reuse it for anything else until Deregister returns.
func (t *Table) Register(pd uint32, buf []byte, access Access, base uint64) (*Region, error) {
	if len(buf) == 0 {
		return nil, ErrEmptyBuffer
	}
	if access&^accessAll != 0 {
		return nil, ErrBadAccess
	}
	if base+uint64(len(buf)) < base {
		return nil, ErrBaseOverflow
	}
	if access&AccessRemoteAtomic != 0 && (base%8 != 0 || !aligned8(buf)) {
		return nil, ErrAtomicAligned
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	index, err := t.newIndexLocked()
	if err != nil {
		return nil, err
	}
	r := &Region{table: t, index: index, pd: pd, buf: buf, base: base}
	r.state.Store(packState(uint8(t.random()), true, access))
	r.life.Store(liveBit)
	t.store(index, r)
	t.count++
	return r, nil
}

// newIndexLocked picks a free random index for a new table entry. Called
// with t.mu held.
func (t *Table) newIndexLocked() (uint32, error) {
	if t.count+t.windows >= t.limit {
		return 0, ErrTableFull
	}
	for tries := 0; ; tries++ {
		index := t.random() & maxIndex
		if index != 0 && t.lookup(index) == nil && !t.qset[index] {
			return index, nil
		}
		if tries > 1<<16 {
			return 0, ErrTableFull
		}
	}
}

// store publishes m[index] = r (or deletes it when r is nil) by copying the
// shard. Callers hold t.mu.
func (t *Table) store(index uint32, r *Region) {
	sp := t.shard(index)
	old := *sp.Load()
	m := make(map[uint32]*Region, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	if r == nil {
		delete(m, index)
	} else {
		m[index] = r
	}
	sp.Store(&m)
}

// Len returns the number of registered regions (memory windows are not
// counted: see Windows).
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// Windows returns the number of allocated memory windows.
func (t *Table) Windows() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.windows
}

// Lookup returns the region registered under stag's index whatever its key
// and state, or nil. It is for invalidation requests, which name an STag and
// need its region to report which check failed. For a memory window's
// index it returns the window's current (or last) binding, whatever its
// key and state, or nil if the window was never bound.
func (t *Table) Lookup(stag STag) *Region {
	r := t.lookup(stag.Index())
	if r != nil && r.win != nil {
		return r.win.view.Load()
	}
	return r
}

// Check validates an access of n bytes at to through stag for protection
// domain pd without pinning the region. For a memory window's STag it
// returns the window's binding (see "Memory windows" in doc.go).
func (t *Table) Check(stag STag, pd uint32, need Access, to uint64, n uint64) (*Region, Reason) {
	r := t.lookup(stag.Index())
	if r == nil {
		return nil, InvalidSTag
	}
	if why := r.check(r.state.Load(), stag, pd, need, to, n); why != OK {
		// A window's table entry is never valid: its check fails here.
		if r.win != nil {
			return r.win.check(stag, pd, need, to, n)
		}
		return nil, why
	}
	return r, OK
}

// CheckLocal validates a local use (an SGE of a local work request, by its
// STag as an lkey) of n bytes at to for protection domain pd: the STag must
// be a registered region's, valid with its key, in pd, inside the region,
// and need may only ask for AccessLocalWrite (local read is always
// allowed). A memory window's STag fails as an InvalidSTag: a window is for
// remote access only.
func (t *Table) CheckLocal(stag STag, pd uint32, need Access, to uint64, n uint64) (*Region, Reason) {
	r := t.lookup(stag.Index())
	if r == nil || r.win != nil {
		return nil, InvalidSTag
	}
	if need&^AccessLocalWrite != 0 {
		return nil, AccessViolated
	}
	if why := r.check(r.state.Load(), stag, pd, need, to, n); why != OK {
		return nil, why
	}
	return r, OK
}

// Acquire validates an access like Check and, if it passes, pins the region
// and returns the n bytes at to. The caller places into (or reads from) the
// slice and then calls r.Release. While pinned, Deregister and Invalidate
// wait, so no byte lands in a buffer whose deregistration has returned.
//
// Acquire's pins carry no generation (they are the engine's of before the
// rebuild, which may hold them across a wait on the peer): every
// invalidation waits for all of them, and a blocking call whose context
// ends while one is held returns without finishing (see Deregister). New
// code uses PinRemote. For a memory window's STag the pin is on the
// window's binding (Release it there).
func (t *Table) Acquire(stag STag, pd uint32, need Access, to uint64, n uint64) ([]byte, *Region, Reason) {
	r := t.lookup(stag.Index())
	if r == nil {
		return nil, nil, InvalidSTag
	}
	if r.win != nil {
		return r.win.acquire(stag, pd, need, to, n)
	}
	r.legacy.Add(1)
	// Checked after pinning: a Begin that cleared the valid bit before this
	// load is seen here; one after it finds the pin in its drain.
	if why := r.check(r.state.Load(), stag, pd, need, to, n); why != OK {
		r.Release()
		return nil, nil, why
	}
	off := to - r.base
	return r.buf[off : off+n : off+n], r, OK
}
