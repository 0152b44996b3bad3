package engine

import "github.com/goiwarp/iwarp/internal/mem"

// Op is the operation of a send work request, and of its completion.
type Op uint8

// Work request operations (RFC 5040 §5).
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

// sendImm reports whether o is a V2 Send with Immediate variant.
func (o Op) sendImm() bool { return o >= OpSendImm && o <= OpSendSEInvImm }

// atomic reports whether o is an RFC 7306 atomic.
func (o Op) atomic() bool { return o == OpFetchAdd || o == OpCmpSwap }

// read reports whether o is an RDMA Read.
func (o Op) read() bool { return o == OpRead || o == OpReadInv }

// outbound reports whether o takes an ORD credit (a response is awaited).
func (o Op) outbound() bool { return o.read() || o.atomic() || o == OpReadV2 }

// CompletedByPeer reports whether a WR of this operation completes when
// the peer's response arrives (a Read or an atomic), rather than when it
// was handed to TCP.
func (o Op) CompletedByPeer() bool { return o.outbound() }

// String names the operation.
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op?"
}

// Flags modify a send work request.
type Flags uint8

// Work request flags.
const (
	// Signaled asks for a completion on success (errors always complete).
	Signaled Flags = 1 << iota
	// Fence makes the WR wait until every earlier Read has completed
	// (RFC 5040 §5.5).
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

// bytes returns the SGE's bytes, or nil if the region no longer covers them.
func (s *SGE) bytes() []byte {
	b := s.Region.Bytes()
	if s.Off > uint64(len(b)) || uint64(len(b))-s.Off < uint64(s.Len) {
		return nil
	}
	return b[s.Off : s.Off+uint64(s.Len)]
}

// SendWR is a send-queue work request. The SGL slice is copied at post time;
// the buffers it names belong to the engine until the WR completes (or, with
// Inline, until PostSend returns).
type SendWR struct {
	ID    uint64
	Op    Op
	Flags Flags
	SGL   []SGE

	// RemoteSTag and RemoteTO name the peer's buffer for Write and Read.
	RemoteSTag uint32
	RemoteTO   uint64
	// InvSTag is the peer STag a Send with Invalidate invalidates.
	InvSTag uint32
	// Imm is the immediate data of OpImmediate* and OpWriteImm*, sent
	// big-endian.
	Imm uint64
	// Atomic operands (RFC 7306 §5.2.1): FetchAdd adds Data under the Add
	// Mask Mask; CmpSwap compares with Compare under CompareMask and swaps
	// in Data under the Swap Mask Mask. RemoteSTag/RemoteTO name the 8
	// bytes; an SGE of at least 8 bytes, if given, receives the original
	// value in host byte order.
	Data, Mask, Compare, CompareMask uint64
	// Waiter, if set, receives the WR's completion instead of the send CQ
	// (whatever Signaled says): the blocking convenience calls use it. The
	// receiver must call QP.ReleaseWaited with the completion afterwards.
	Waiter chan<- CQE
}

// RecvWR is a receive-queue work request: the buffers the next Send lands in.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// Status is the outcome of a work request.
type Status uint8

// Completion statuses.
const (
	StatusSuccess         Status = iota // completed as asked
	StatusFlushed                       // not completed: the QP left RTS first
	StatusLocalLength                   // a received message did not fit the posted buffers
	StatusLocalProtection               // an SGE no longer covered by its region
	StatusRemoteAccess                  // the peer refused the access (its Terminate)
	StatusRemoteOperation               // the peer failed the operation (its Terminate)
	StatusFatal                         // the connection failed: see the completion's error
)

var statusNames = [...]string{
	StatusSuccess: "success", StatusFlushed: "flushed", StatusLocalLength: "local length error",
	StatusLocalProtection: "local protection error", StatusRemoteAccess: "remote access error",
	StatusRemoteOperation: "remote operation error", StatusFatal: "fatal error",
}

// String names the status.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status?"
}

// CQEFlags describe a completion.
type CQEFlags uint8

// Completion flags.
const (
	// Solicited: the completion is of a message that asked for a solicited
	// event (Send with SE).
	Solicited CQEFlags = 1 << iota
	// Invalidated: a Send with Invalidate invalidated CQE.InvSTag.
	Invalidated
	// HasImm: the receive completed an Immediate Data message; CQE.Imm
	// holds the 8 bytes.
	HasImm
)

// CQE is one completion queue entry.
type CQE struct {
	ID      uint64
	QP      *QP
	Status  Status
	Op      Op
	Flags   CQEFlags
	Len     uint32 // bytes received (receives) or transferred
	InvSTag uint32
	Imm     uint64 // immediate data (HasImm)
	// Original is the value an atomic found at its target.
	Original uint64
	Err      error // why, for a status other than success; nil otherwise

	// sqSeq is the send-queue sequence number of the WR (sends), used to
	// free send-queue slots when the completion is polled; rq and rqSeq
	// name the receive's slot (receives).
	sqSeq uint64
	rq    *recvQueue
	rqSeq uint64
}
