package main

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp"
)

// The demo's RFC 7306 atomics: each runs against a 64-bit word the
// responder registers with remote atomic access, checks every original
// value returned and the word left in memory.

// demoFetchAdds is the number of FetchAdds of the FetchAdd step.
const demoFetchAdds = 100

// atomicOp runs atomics on word, a remote view of the 64-bit word of mr
// at offset 0 that holds the value the op set up.
type atomicOp func(ctx context.Context, qp *iwarp.QP, word iwarp.RemoteBuffer, mr *iwarp.MR) error

// atomicStep registers a word at the responder and times op on it from
// the initiator.
func atomicStep(op atomicOp) func(e *demoEnv) (time.Duration, error) {
	return func(e *demoEnv) (time.Duration, error) {
		mr, err := e.resp.pd.RegisterMemory(alignedBuf(8), iwarp.AccessRemoteAtomic)
		if err != nil {
			return 0, err
		}
		defer mr.Deregister(e.ctx)
		start := time.Now()
		err = op(e.ctx, e.init.qp, mr.Remote(), mr)
		return time.Since(start), err
	}
}

// alignedBuf returns n bytes at an 8-byte aligned address, as remote
// atomics require.
func alignedBuf(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

// expectWord checks the word left in memory.
func expectWord(mr *iwarp.MR, want uint64) error {
	v, err := mr.AtomicLoad(0)
	if err != nil {
		return err
	}
	if v != want {
		return fmt.Errorf("memory holds %#x, want %#x", v, want)
	}
	return nil
}

// expectOriginal checks what an atomic returned.
func expectOriginal(what string, got uint64, err error, want uint64) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if got != want {
		return fmt.Errorf("%s returned %#x, want %#x", what, got, want)
	}
	return nil
}

// demoFetchAdd adds 3 demoFetchAdds times (RFC 7306 §5.1.1).
func demoFetchAdd(ctx context.Context, qp *iwarp.QP, word iwarp.RemoteBuffer, mr *iwarp.MR) error {
	for i := range demoFetchAdds {
		orig, err := qp.FetchAdd(ctx, word, 3)
		if err := expectOriginal(fmt.Sprintf("FetchAdd %d", i), orig, err, uint64(3*i)); err != nil {
			return err
		}
	}
	return expectWord(mr, 3*demoFetchAdds)
}

// demoFetchAddMasked adds field by field: a set bit of the add mask marks
// the most significant bit of a field, and the carry out of it is dropped
// (RFC 7306 §5.1.1).
func demoFetchAddMasked(ctx context.Context, qp *iwarp.QP, word iwarp.RemoteBuffer, mr *iwarp.MR) error {
	if _, err := mr.AtomicCompareAndSwap(0, 0, 0x00000001ffffffff); err != nil {
		return err
	}
	// Two 32-bit fields: 0xffffffff+1 wraps to 0 without carrying into
	// the high field, which goes from 1 to 2.
	orig, err := qp.FetchAddMasked(ctx, word, 0x0000000100000001, 0x8000000080000000)
	if err := expectOriginal("FetchAdd with add mask 0x8000000080000000", orig, err, 0x00000001ffffffff); err != nil {
		return err
	}
	if err := expectWord(mr, 0x0000000200000000); err != nil {
		return err
	}
	// Four 16-bit fields: 0x0002+0xfffe wraps to 0 and the field above
	// stays 0x0001 (a plain add would carry: 0x0002000000010003).
	orig, err = qp.FetchAddMasked(ctx, word, 0x0001fffe00010003, 0x8000800080008000)
	if err := expectOriginal("FetchAdd with add mask 0x8000800080008000", orig, err, 0x0000000200000000); err != nil {
		return err
	}
	return expectWord(mr, 0x0001000000010003)
}

// demoCompareSwap swaps once when the value matches and not when it does
// not (RFC 7306 §5.1.2); both return the original value.
func demoCompareSwap(ctx context.Context, qp *iwarp.QP, word iwarp.RemoteBuffer, mr *iwarp.MR) error {
	if _, err := mr.AtomicCompareAndSwap(0, 0, 300); err != nil {
		return err
	}
	orig, err := qp.CompareSwap(ctx, word, 300, 7)
	if err := expectOriginal("matching CompareSwap", orig, err, 300); err != nil {
		return err
	}
	orig, err = qp.CompareSwap(ctx, word, 300, 9)
	if err := expectOriginal("CompareSwap that does not match", orig, err, 7); err != nil {
		return err
	}
	return expectWord(mr, 7)
}

// demoCompareSwapMasked compares only the bits of the compare mask and
// replaces only the bits of the swap mask (RFC 7306 §5.1.2).
func demoCompareSwapMasked(ctx context.Context, qp *iwarp.QP, word iwarp.RemoteBuffer, mr *iwarp.MR) error {
	const start = 0x1122334455667788
	if _, err := mr.AtomicCompareAndSwap(0, 0, start); err != nil {
		return err
	}
	// The high 32 bits match (the low ones, which differ, are not
	// compared): the low 16 bits are swapped, the rest kept.
	orig, err := qp.CompareSwapMasked(ctx, word, 0x11223344_00000000, 0xffffffff_00000000, 0xaaaaaaaa_aaaaaaaa, 0x00000000_0000ffff)
	if err := expectOriginal("CompareSwap with matching masked bits", orig, err, start); err != nil {
		return err
	}
	if err := expectWord(mr, 0x112233445566aaaa); err != nil {
		return err
	}
	// A compare mask bit that differs: nothing is swapped.
	orig, err = qp.CompareSwapMasked(ctx, word, 0x02000000_00000000, 0x0f000000_00000000, 0, ^uint64(0))
	if err := expectOriginal("CompareSwap with a differing masked bit", orig, err, 0x112233445566aaaa); err != nil {
		return err
	}
	if err := expectWord(mr, 0x112233445566aaaa); err != nil {
		return err
	}
	// A zero compare mask compares nothing: the swap mask's bits are
	// taken whatever the value.
	orig, err = qp.CompareSwapMasked(ctx, word, 0, 0, 0xffffffff_00000000, 0xff000000_00000000)
	if err := expectOriginal("CompareSwap with a zero compare mask", orig, err, 0x112233445566aaaa); err != nil {
		return err
	}
	return expectWord(mr, 0xff2233445566aaaa)
}
