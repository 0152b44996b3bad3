package iwarp

import (
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/verbs"
	"github.com/goiwarp/iwarp/rdma"
)

// Opcode is the operation of a work request or a completion.
type Opcode uint8

// Operations (RFC 5040 §5).
const (
	// OpSend sends a message into the peer's next posted receive.
	OpSend Opcode = iota + 1
	// OpSendInvalidate is a Send that also invalidates the peer's STag
	// SendWR.InvalidateSTag once the message is placed.
	OpSendInvalidate
	// OpWrite writes the local SGL into the peer's memory (one-sided).
	OpWrite
	// OpRead reads the peer's memory into the local SGL (one-sided).
	OpRead
	// OpRecv is the opcode of a receive completion.
	OpRecv
	// OpFetchAdd is the RFC 7306 Atomic FetchAdd: add SendWR.Add to the
	// 8 bytes at Remote (per field, when AddMask is not zero) and return
	// the original value.
	OpFetchAdd
	// OpCompareSwap is the RFC 7306 Atomic CmpSwap: if the 8 bytes at
	// Remote equal Compare on the bits of CompareMask, replace the bits of
	// SwapMask with Swap's; return the original value either way. A plain
	// compare-and-swap uses all-ones masks (zero masks compare nothing and
	// swap nothing: see QP.CompareSwap).
	OpCompareSwap
	// OpImmediate sends RFC 7306 Immediate Data: 8 bytes that consume one
	// receive at the peer and arrive in its completion.
	OpImmediate
	// OpWriteWithImmediate is an RDMA Write followed by Immediate Data: the
	// peer's receive completion (with the 8 bytes) comes after the Write
	// was placed.
	OpWriteWithImmediate
	// OpLocalInvalidate invalidates the local STag SendWR.InvalidateSTag,
	// in send-queue order (nothing is sent): new arrivals fail at once,
	// and the WR completes once no placement into the region is in flight.
	OpLocalInvalidate
	// OpReadWithInvalidate is an RDMA Read that invalidates its sink's STag
	// when the data has been placed ("Read with local invalidate").
	OpReadWithInvalidate
	// OpSendWithImmediate is the V2 draft's Send with Immediate Data: the
	// SGL's bytes land in the peer's receive and Immediate arrives in its
	// completion (with Solicited: a solicited event). Needs V2 agreed.
	OpSendWithImmediate
	// OpSendInvalidateWithImmediate is Send with Immediate that also
	// invalidates the peer's STag InvalidateSTag. Needs V2 agreed.
	OpSendInvalidateWithImmediate
	// OpReadV2 is the V2 draft's RDMA Read V2: the request names only the
	// peer's source buffer; the response is untagged and lands in the SGL,
	// which may have several SGEs and is never exposed on the wire. Needs
	// V2 agreed (OpRead is the RFC 5040 Read, which exposes the sink STag).
	OpReadV2
)

var opcodeNames = [...]string{OpSend: "Send", OpSendInvalidate: "SendInvalidate", OpWrite: "Write", OpRead: "Read", OpRecv: "Recv",
	OpFetchAdd: "FetchAdd", OpCompareSwap: "CompareSwap", OpImmediate: "Immediate", OpWriteWithImmediate: "WriteWithImmediate",
	OpLocalInvalidate: "LocalInvalidate", OpReadWithInvalidate: "ReadWithInvalidate",
	OpSendWithImmediate: "SendWithImmediate", OpSendInvalidateWithImmediate: "SendInvalidateWithImmediate", OpReadV2: "ReadV2"}

// String names the operation.
func (o Opcode) String() string {
	if int(o) < len(opcodeNames) && opcodeNames[o] != "" {
		return opcodeNames[o]
	}
	return "Opcode?"
}

// SendFlags modify a send work request.
type SendFlags uint8

// Send flags.
const (
	// Signaled asks for a completion on success; failures always complete.
	Signaled SendFlags = 1 << iota
	// Fence makes the WR wait until every earlier RDMA Read on the QP has
	// completed (RFC 5040 §5.5).
	Fence
	// Inline copies the payload at post time: the buffers are free again
	// when PostSend returns. At most QPConfig.MaxInline bytes.
	Inline
	// Solicited asks for a solicited event at the receiver (Send with
	// Solicited Event, RFC 5040 §5.3): it wakes a CQ armed for solicited
	// completions only.
	Solicited
)

// SGE is one element of a scatter/gather list: Length bytes at Offset of a
// registered region.
type SGE struct {
	MR     *MR
	Offset int
	Length int
}

// SendWR is a send-queue work request. Until it completes (or, with Inline,
// until PostSend returns), the memory its SGL names belongs to the QP: the
// caller must not write (Send, Write) or read (Read) it.
type SendWR struct {
	// ID is returned in the completion.
	ID    uint64
	Op    Opcode
	Flags SendFlags
	// SGL is the local memory: the payload of a Send or Write, the sink of
	// a Read (a single SGE on iWARP).
	SGL []SGE
	// Remote is the peer's memory for Write and Read (its Len is not used:
	// the SGL's total length is the size).
	Remote RemoteBuffer
	// InvalidateSTag is the peer STag an OpSendInvalidate invalidates, or
	// the local STag an OpLocalInvalidate invalidates.
	InvalidateSTag uint32
	// Immediate is the 8 bytes of OpImmediate and OpWriteWithImmediate
	// (sent big-endian).
	Immediate uint64
	// Atomic operands (RFC 7306 §5.1). For atomics Remote names the 8
	// aligned bytes, and the SGL may hold one SGE of at least 8 bytes that
	// receives the original value (host byte order).
	Add, AddMask                         uint64 // OpFetchAdd
	Compare, CompareMask, Swap, SwapMask uint64 // OpCompareSwap
}

// RecvWR is a receive-queue work request: where the next Send lands.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

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

// Completion reports a finished work request.
type Completion struct {
	ID     uint64
	QP     *QP
	Status Status
	Op     Opcode
	// Len is the number of bytes received (OpRecv) or transferred.
	Len int
	// Solicited: the received message asked for a solicited event.
	Solicited bool
	// Invalidated is the local STag a received Send with Invalidate
	// invalidated, or 0.
	Invalidated uint32
	// HasImmediate: the receive completed Immediate Data (RFC 7306), whose
	// 8 bytes are Immediate. Len is 8 when they were also placed in the
	// receive buffer (one of at least 8 bytes), 0 otherwise.
	HasImmediate bool
	Immediate    uint64
	// Original is the value an atomic found at its target.
	Original uint64
	// Err says why, for a status other than StatusSuccess: a
	// *TerminateError, the QP's error for StatusFlushed, a local error
	// such as ErrLocalProtection, etc.
	Err error
}

var fromEngineOp = [...]Opcode{
	rdmap.OpSend: OpSend, rdmap.OpSendInv: OpSendInvalidate, rdmap.OpSendSE: OpSend,
	rdmap.OpSendSEInv: OpSendInvalidate, rdmap.OpWrite: OpWrite, rdmap.OpRead: OpRead, rdmap.OpRecv: OpRecv,
	rdmap.OpFetchAdd: OpFetchAdd, rdmap.OpCmpSwap: OpCompareSwap, rdmap.OpImmediate: OpImmediate,
	rdmap.OpImmediateSE: OpImmediate, rdmap.OpWriteImm: OpWriteWithImmediate, rdmap.OpWriteImmSE: OpWriteWithImmediate,
	rdmap.OpLocalInv: OpLocalInvalidate, rdmap.OpReadInv: OpReadWithInvalidate,
	rdmap.OpSendImm: OpSendWithImmediate, rdmap.OpSendSEImm: OpSendWithImmediate,
	rdmap.OpSendInvImm: OpSendInvalidateWithImmediate, rdmap.OpSendSEInvImm: OpSendInvalidateWithImmediate,
	rdmap.OpReadV2: OpReadV2,
}

// completion converts an engine completion.
func completion(e *rdmap.Completion, q *verbs.QP) Completion {
	c := Completion{ID: e.ID, Status: e.Status, Len: int(e.Len), Err: e.Err}
	if int(e.Op) < len(fromEngineOp) {
		c.Op = fromEngineOp[e.Op]
	}
	if q != nil {
		c.QP, _ = q.User.(*QP)
	}
	c.Solicited = e.Flags&rdmap.Solicited != 0
	c.HasImmediate, c.Immediate, c.Original = e.Flags&rdmap.HasImm != 0, e.Imm, e.Original
	if e.Flags&rdmap.Invalidated != 0 {
		c.Invalidated = e.InvSTag
	}
	if c.Err != nil {
		c.Err = wrapEngineError(c.Err)
	}
	return c
}
