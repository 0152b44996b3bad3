package iwarp

import (
	"context"
)

// Blocking RFC 7306 calls. Like Send/Write/Read they post an ordinary work
// request and wait for its completion; they need RFC 7306 to have been
// agreed with the peer (QPAttributes.RFC7306) or declared
// (ConnOptions.PeerExtensions), else they fail with ErrNotSupportedByPeer
// and send nothing. remote names the 8-byte aligned target (its Len is not
// used).

// FetchAdd atomically adds add to the 64-bit value at remote and returns
// the value it held before (RFC 7306 §5.1.1).
func (qp *QP) FetchAdd(ctx context.Context, remote RemoteBuffer, add uint64) (uint64, error) {
	return qp.atomic(ctx, SendWR{Op: OpFetchAdd, Remote: remote, Add: add})
}

// FetchAddMasked is FetchAdd on the fields of the 64-bit value that
// addMask delimits: a set bit marks the most significant bit of a field
// and stops the carry out of it (RFC 7306 §5.1.1).
func (qp *QP) FetchAddMasked(ctx context.Context, remote RemoteBuffer, add, addMask uint64) (uint64, error) {
	return qp.atomic(ctx, SendWR{Op: OpFetchAdd, Remote: remote, Add: add, AddMask: addMask})
}

// CompareSwap atomically replaces the 64-bit value at remote with swap if
// it equals compare, and returns the value it held before either way (the
// swap happened if and only if that equals compare).
func (qp *QP) CompareSwap(ctx context.Context, remote RemoteBuffer, compare, swap uint64) (uint64, error) {
	return qp.atomic(ctx, SendWR{Op: OpCompareSwap, Remote: remote,
		Compare: compare, CompareMask: ^uint64(0), Swap: swap, SwapMask: ^uint64(0)})
}

// CompareSwapMasked is the masked CmpSwap of RFC 7306 §5.1.2: if the value
// and compare agree on the bits of compareMask, the bits of swapMask are
// taken from swap. It returns the original value.
func (qp *QP) CompareSwapMasked(ctx context.Context, remote RemoteBuffer, compare, compareMask, swap, swapMask uint64) (uint64, error) {
	return qp.atomic(ctx, SendWR{Op: OpCompareSwap, Remote: remote,
		Compare: compare, CompareMask: compareMask, Swap: swap, SwapMask: swapMask})
}

func (qp *QP) atomic(ctx context.Context, wr SendWR) (uint64, error) {
	c, err := qp.Do(ctx, wr)
	if err != nil {
		return 0, err
	}
	if c.Status != StatusSuccess {
		return 0, &WRError{Status: c.Status, Op: c.Op, Err: c.Err}
	}
	return c.Original, nil
}

// ImmediateData sends RFC 7306 Immediate Data (§6), 8 bytes without a
// payload: imm arrives in the peer's next receive completion
// (Completion.Immediate). flags may hold Solicited, to raise a solicited
// event at the peer. (SendWithImmediate is the V2 draft's Send with
// Immediate, which also carries a payload.)
func (qp *QP) ImmediateData(ctx context.Context, imm uint64, flags SendFlags) error {
	return qp.do(ctx, SendWR{Op: OpImmediate, Flags: flags, Immediate: imm})
}

// WriteWithImmediate writes the SGL into the peer's memory at remote and
// then delivers imm to the peer's next receive completion, which the peer
// sees only after the Write was placed.
func (qp *QP) WriteWithImmediate(ctx context.Context, remote RemoteBuffer, imm uint64, sgl ...SGE) error {
	return qp.do(ctx, SendWR{Op: OpWrite, Flags: WithImmediate, Remote: remote, Immediate: imm, SGL: sgl})
}

// AtomicLoad loads the 64-bit word at byte offset off of the region,
// atomically with respect to remote atomics on it.
func (mr *MR) AtomicLoad(off int) (uint64, error) {
	to, err := mr.word(off)
	if err != nil {
		return 0, err
	}
	return mr.r.AtomicLoad(to), nil
}

// AtomicAdd adds delta to the 64-bit word at byte offset off, atomically
// with respect to remote atomics (the Device is one atomicity domain), and
// returns the previous value.
func (mr *MR) AtomicAdd(off int, delta uint64) (uint64, error) {
	to, err := mr.word(off)
	if err != nil {
		return 0, err
	}
	return mr.r.AtomicFetchAdd(to, delta, 0), nil
}

// AtomicCompareAndSwap replaces the 64-bit word at byte offset off with
// swap if it equals compare, atomically with respect to remote atomics, and
// returns the previous value.
func (mr *MR) AtomicCompareAndSwap(off int, compare, swap uint64) (uint64, error) {
	to, err := mr.word(off)
	if err != nil {
		return 0, err
	}
	return mr.r.AtomicCmpSwap(to, compare, ^uint64(0), swap, ^uint64(0)), nil
}

func (mr *MR) word(off int) (uint64, error) {
	if off < 0 {
		return 0, ErrNotAtomicWord
	}
	to := mr.r.Base() + uint64(off)
	if !mr.r.LocalWord(to) {
		return 0, ErrNotAtomicWord
	}
	return to, nil
}

// SendWithImmediate sends the SGL as one message with the V2 draft's Send
// with Immediate Data: the peer's receive gets the bytes and its
// completion carries imm. Needs V2 agreed (QPAttributes.V2).
func (qp *QP) SendWithImmediate(ctx context.Context, imm uint64, sgl ...SGE) error {
	return qp.do(ctx, SendWR{Op: OpSend, Flags: WithImmediate, Immediate: imm, SGL: sgl})
}

// ReadV2 reads the peer's memory at remote into the SGL (one or more
// SGEs, their total length being the size) with the V2 draft's RDMA Read
// V2, which never exposes the local buffers on the wire. Needs V2 agreed;
// with a peer without V2 the caller may choose QP.Read (RFC 5040) instead,
// which names the sink's STag on the wire.
func (qp *QP) ReadV2(ctx context.Context, remote RemoteBuffer, sgl ...SGE) error {
	return qp.do(ctx, SendWR{Op: OpReadV2, Remote: remote, SGL: sgl})
}
