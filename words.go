package iwarp

import (
	"fmt"
	"unsafe"
)

// maxWords bounds RegisterWords: a region's length must fit the 32-bit
// Len of a RemoteBuffer.
const maxWords = (1<<32 - 1) / 8

// RegisterWords allocates n 64-bit words, 8-byte aligned as RFC 7306
// atomics require, and registers them with the given access rights (for
// remote atomics, AccessRemoteAtomic): the memory of counters, locks and
// flags that peers update with QP.FetchAdd and QP.CompareSwap. Word i is at
// byte offset 8*i of the region (TO 8*i: MR.RemoteSlice(8*i, 8) names it to
// a peer, and MR.Remote names them all).
//
// The returned []uint64 aliases the region's bytes (MR.Bytes): words[i]
// is the value remote atomics act on, in the host's byte order (what a
// peer's RDMA Read or Write of the words sees and sets is that byte
// order's encoding). Words a peer can reach may change at any moment, so
// access them only atomically: with MR.AtomicLoad, MR.AtomicAdd and
// MR.AtomicCompareAndSwap (offset 8*i), or sync/atomic on &words[i]; both
// are atomic with respect to the peers' atomics. Like any registered
// buffer, the words must not be reused for anything else until the MR is
// deregistered.
func (pd *PD) RegisterWords(n int, access Access) (*MR, []uint64, error) {
	if n < 1 || n > maxWords {
		return nil, nil, fmt.Errorf("%w: %d words, want 1 to %d", ErrInvalidBuffer, n, maxWords)
	}
	words := make([]uint64, n) // a []uint64's array is 8-byte aligned
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8*n)
	mr, err := pd.RegisterMemory(buf, access)
	if err != nil {
		return nil, nil, err
	}
	return mr, words, nil
}
