package iwarp

import "github.com/goiwarp/iwarp/rdma"

// The work-request vocabulary is package rdma's, re-exported here under the
// same names: most programs never import rdma.

// Opcode is the operation of a work request or a completion: OpSend,
// OpWrite, OpRead, OpReadV2, OpFetchAdd, OpCompareSwap, OpImmediate,
// OpLocalInvalidate, OpBindWindow, and OpRecv for receive completions. Variants of an
// operation (Solicited, Invalidate, WithImmediate) are SendFlags; see
// rdma.Opcode for each one's meaning and the flags it takes.
type Opcode = rdma.Opcode

// Operations (RFC 5040 §5, RFC 7306, the RDMAP Extensions V2 draft).
const (
	OpSend            = rdma.OpSend
	OpWrite           = rdma.OpWrite
	OpRead            = rdma.OpRead
	OpRecv            = rdma.OpRecv
	OpFetchAdd        = rdma.OpFetchAdd
	OpCompareSwap     = rdma.OpCompareSwap
	OpImmediate       = rdma.OpImmediate
	OpLocalInvalidate = rdma.OpLocalInvalidate
	OpReadV2          = rdma.OpReadV2
	OpBindWindow      = rdma.OpBindWindow
)

// SendFlags modify a send work request: Signaled, Fence, Inline (at most
// QPConfig.MaxInline bytes), and the variants Solicited, Invalidate and
// WithImmediate (rdma.ValidFlags says which operation takes which).
type SendFlags = rdma.SendFlags

// Send flags.
const (
	Signaled      = rdma.Signaled
	Fence         = rdma.Fence
	Inline        = rdma.Inline
	Solicited     = rdma.Solicited
	Invalidate    = rdma.Invalidate
	WithImmediate = rdma.WithImmediate
)

// SGE is one element of a scatter/gather list: Length bytes at Offset of
// the local region whose STag is STag. MR.SGE makes one.
type SGE = rdma.SGE

// SendWR is a send-queue work request (see rdma.SendWR for its fields).
// Until it completes (or, with Inline, until PostSend returns), the memory
// its SGL names belongs to the QP.
type SendWR = rdma.SendWR

// RecvWR is a receive-queue work request: where the next Send lands.
type RecvWR = rdma.RecvWR

// Completion reports a finished work request (see rdma.Completion for its
// fields). Its QPNum is the QP's Num; its Err, for a status other than
// StatusSuccess, is a *TerminateError, the QP's error for StatusFlushed, or
// a local error such as ErrLocalProtection.
type Completion = rdma.Completion

// RemoteBuffer names a peer's registered memory (STag, TO, Len): what a
// peer advertises so that one-sided operations can target it. Its 16-byte
// binary encoding (TO, STag, Len, big-endian) is rping's.
type RemoteBuffer = rdma.RemoteBuffer

// RemoteBufferLen is the length of a RemoteBuffer's binary encoding.
const RemoteBufferLen = rdma.RemoteBufferLen

// Status is the outcome of a work request (see package rdma for each
// value's meaning).
type Status = rdma.Status

// Completion statuses.
const (
	StatusSuccess         = rdma.StatusSuccess
	StatusFlushed         = rdma.StatusFlushed
	StatusLocalLength     = rdma.StatusLocalLength
	StatusLocalProtection = rdma.StatusLocalProtection
	StatusRemoteAccess    = rdma.StatusRemoteAccess
	StatusRemoteOperation = rdma.StatusRemoteOperation
	StatusFatal           = rdma.StatusFatal
)
