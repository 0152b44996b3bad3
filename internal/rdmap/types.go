package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// Op is the operation of a send work request, and of its completion.
type Op uint8

// Work request operations (RFC 5040 §5, RFC 7306, the V2 draft).
const (
	OpSend      Op = iota + 1 // Send (RFC 5040 §5.3)
	OpSendInv                 // Send with Invalidate
	OpSendSE                  // Send with Solicited Event
	OpSendSEInv               // Send with Solicited Event and Invalidate
	OpWrite                   // RDMA Write (RFC 5040 §5.1)
	OpRead                    // RDMA Read (RFC 5040 §5.2)
	OpRecv                    // the completion of a receive work request

	// RFC 7306.
	OpFetchAdd    // Atomic FetchAdd (with Add Mask), §5.1.1
	OpCmpSwap     // Atomic CmpSwap (with Compare and Swap Masks), §5.1.2
	OpImmediate   // Immediate Data, §6
	OpImmediateSE // Immediate Data with Solicited Event
	OpWriteImm    // RDMA Write followed by Immediate Data ("Write with Immediate")
	OpWriteImmSE  // RDMA Write followed by Immediate Data with Solicited Event

	OpLocalInv // invalidate a local STag (InvSTag), in send-queue order
	OpReadInv  // RDMA Read that invalidates its sink's STag on completion

	// The V2 draft (only once V2 is agreed).
	OpSendImm      // Send with Immediate Data
	OpSendInvImm   // Send with Invalidate and Immediate Data
	OpSendSEImm    // Send with Solicited Event and Immediate Data
	OpSendSEInvImm // Send with Invalidate, Solicited Event and Immediate Data
	OpReadV2       // RDMA Read V2: the response lands in the SGL, untagged on QN 3
)

var opNames = [...]string{
	OpSend: "Send", OpSendInv: "SendInv", OpSendSE: "SendSE", OpSendSEInv: "SendSEInv",
	OpWrite: "Write", OpRead: "Read", OpRecv: "Recv",
	OpFetchAdd: "FetchAdd", OpCmpSwap: "CmpSwap", OpImmediate: "Immediate", OpImmediateSE: "ImmediateSE",
	OpWriteImm: "WriteImm", OpWriteImmSE: "WriteImmSE", OpLocalInv: "LocalInv", OpReadInv: "ReadInv",
	OpSendImm: "SendImm", OpSendInvImm: "SendInvImm", OpSendSEImm: "SendSEImm", OpSendSEInvImm: "SendSEInvImm",
	OpReadV2: "ReadV2",
}

// String names the operation.
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op?"
}

// CompletedByPeer reports whether a WR of this operation completes when
// the peer's response arrives (a Read or an atomic), rather than when its
// last octet was handed to TCP.
func (o Op) CompletedByPeer() bool { return o.outbound() }

// send reports whether o is one of the four RFC 5040 Sends.
func (o Op) send() bool { return o >= OpSend && o <= OpSendSEInv }

// sendImm reports whether o is a V2 Send with Immediate variant.
func (o Op) sendImm() bool { return o >= OpSendImm && o <= OpSendSEInvImm }

// atomic reports whether o is an RFC 7306 atomic.
func (o Op) atomic() bool { return o == OpFetchAdd || o == OpCmpSwap }

// read reports whether o is an RFC 5040 RDMA Read.
func (o Op) read() bool { return o == OpRead || o == OpReadInv }

// write reports whether o starts with an RDMA Write.
func (o Op) write() bool { return o == OpWrite || o == OpWriteImm || o == OpWriteImmSE }

// immediate reports whether o is an Immediate Data message alone.
func (o Op) immediate() bool { return o == OpImmediate || o == OpImmediateSE }

// outbound reports whether o takes an ORD credit (a response is awaited).
func (o Op) outbound() bool { return o.read() || o.atomic() || o == OpReadV2 }

// carriesPayload reports whether o sends the bytes of its SGL.
func (o Op) carriesPayload() bool { return o.send() || o.sendImm() || o.write() }

// Flags modify a send work request.
type Flags uint8

// Work request flags.
const (
	// Signaled asks for a completion on success (errors always complete).
	Signaled Flags = 1 << iota
	// Fence makes the WR wait until every earlier Read and atomic has
	// completed (RFC 5040 §5.5).
	Fence
	// Inline copies the payload at post time: the buffers are free for
	// reuse as soon as PostSend returns.
	Inline
)

// SGE is one element of a scatter/gather list: Len bytes at byte offset Off
// of a registered region's buffer.
type SGE struct {
	Region *mem.Region
	Off    uint64
	Len    uint32
}

// bytes returns the SGE's bytes, or nil if the region does not cover them.
// Reading or writing them needs a pin or lease of the region at the
// generation recorded when the WR was posted.
func (s *SGE) bytes() []byte {
	b := s.Region.Bytes()
	if s.Off > uint64(len(b)) || uint64(len(b))-s.Off < uint64(s.Len) {
		return nil
	}
	return b[s.Off : s.Off+uint64(s.Len)]
}

// SendWR is a send-queue work request. The SGL slice is copied at post time;
// the buffers it names belong to the QP until the WR completes (or, with
// Inline, until PostSend returns).
type SendWR struct {
	ID    uint64
	Op    Op
	Flags Flags
	SGL   []SGE

	// RemoteSTag and RemoteTO name the peer's buffer for Write, Read,
	// Read V2 and the atomics.
	RemoteSTag uint32
	RemoteTO   uint64
	// InvSTag is the STag a Send with Invalidate invalidates at the peer,
	// or the local STag of OpLocalInv.
	InvSTag uint32
	// Imm is the immediate data of OpImmediate*, OpWriteImm* and
	// OpSend*Imm, sent big-endian.
	Imm uint64
	// Atomic operands (RFC 7306 §5.2.1): FetchAdd adds Data under the Add
	// Mask Mask; CmpSwap compares with Compare under CompareMask and swaps
	// in Data under the Swap Mask Mask. An SGE of at least 8 bytes, if
	// given, receives the original value in host byte order.
	Data, Mask, Compare, CompareMask uint64
}

// RecvWR is a receive work request: the buffers the next Send lands in.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// CompFlags describe a completion.
type CompFlags uint8

// Completion flags.
const (
	// Solicited: the completion is of a message that asked for a solicited
	// event (Send with SE, Immediate Data with SE).
	Solicited CompFlags = 1 << iota
	// Invalidated: a Send with Invalidate invalidated Completion.InvSTag.
	Invalidated
	// HasImm: the receive completed an Immediate Data message or a Send
	// with Immediate; Completion.Imm holds the 8 bytes.
	HasImm
)

// Queue names the queue a completion belongs to.
type Queue uint8

// The queues of a QP.
const (
	SendQueue Queue = iota
	RecvQueue
)

// Completion is the outcome of one work request.
type Completion struct {
	Queue  Queue
	ID     uint64
	Status rdma.Status
	Op     Op
	Flags  CompFlags
	// Len is the number of bytes received (receives) or transferred
	// (sends; 8 for an atomic).
	Len     uint32
	InvSTag uint32
	Imm     uint64 // immediate data (HasImm)
	// Original is the value an atomic found at its target.
	Original uint64
	Err      error // why, for a status other than success; nil otherwise
	// Signaled: a send WR posted with Signaled. An unsignaled send WR
	// produces a completion only when it fails.
	Signaled bool
	// Slot names the WR's queue slot, which stays taken until the
	// completion has been consumed: Core.ReleaseSend(Slot) for a send,
	// and for a receive the RecvSource's release (Core.ReleaseRecv for
	// the Core's own receive queue).
	Slot uint64
}
