package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// SendWR and RecvWR are the work requests of package rdma, which the
// engine takes as they are: PostSend and PostRecv resolve each SGE's STag
// into a Seg.
type (
	SendWR = rdma.SendWR
	RecvWR = rdma.RecvWR
)

// The shapes of operation a send WR can have, by its opcode and flags.

// sendPlain reports whether wr is an RFC 5040 Send (with or without
// Solicited Event and Invalidate).
func sendPlain(wr *SendWR) bool { return wr.Op == rdma.OpSend && wr.Flags&rdma.WithImmediate == 0 }

// sendImm reports whether wr is a V2 Send with Immediate variant.
func sendImm(wr *SendWR) bool { return wr.Op == rdma.OpSend && wr.Flags&rdma.WithImmediate != 0 }

// atomic reports whether wr is an RFC 7306 atomic.
func atomic(wr *SendWR) bool { return wr.Op == rdma.OpFetchAdd || wr.Op == rdma.OpCompareSwap }

// read reports whether wr is an RFC 5040 RDMA Read.
func read(wr *SendWR) bool { return wr.Op == rdma.OpRead }

// writeImm reports whether wr is an RDMA Write followed by Immediate Data.
func writeImm(wr *SendWR) bool { return wr.Op == rdma.OpWrite && wr.Flags&rdma.WithImmediate != 0 }

// immediate reports whether wr is an Immediate Data message alone.
func immediate(wr *SendWR) bool { return wr.Op == rdma.OpImmediate }

// outbound reports whether wr takes an ORD credit (a response is awaited).
func outbound(wr *SendWR) bool { return read(wr) || atomic(wr) || wr.Op == rdma.OpReadV2 }

// CompletedByPeer reports whether a WR of this shape completes when the
// peer's response arrives (a Read or an atomic), rather than when its last
// octet was handed to TCP.
func CompletedByPeer(wr *SendWR) bool { return outbound(wr) }

// carriesPayload reports whether wr sends the bytes of its SGL.
func carriesPayload(wr *SendWR) bool { return wr.Op == rdma.OpSend || wr.Op == rdma.OpWrite }

// invalidates reports whether wr is a Send with Invalidate.
func invalidates(wr *SendWR) bool { return wr.Op == rdma.OpSend && wr.Flags&rdma.Invalidate != 0 }

// Seg is an SGE resolved at post time: Len bytes at byte offset Off of a
// registered region's buffer.
type Seg struct {
	Region *mem.Region
	Off    uint64
	Len    uint32
}

// bytes returns the Seg's bytes, or nil if the region does not cover them.
// Reading or writing them needs a pin or lease of the region at the
// generation recorded when the WR was posted.
func (s *Seg) bytes() []byte {
	b := s.Region.Bytes()
	if s.Off > uint64(len(b)) || uint64(len(b))-s.Off < uint64(s.Len) {
		return nil
	}
	return b[s.Off : s.Off+uint64(s.Len)]
}

// Queue names the queue a completion belongs to.
type Queue uint8

// The queues of a QP.
const (
	SendQueue Queue = iota
	RecvQueue
)

// Completion is the outcome of one work request: package rdma's
// completion, with what the shell needs to release the WR's slot.
type Completion struct {
	rdma.Completion
	Queue Queue
	// Signaled: a send WR posted with Signaled. An unsignaled send WR
	// produces a completion only when it fails.
	Signaled bool
	// Slot names the WR's queue slot, which stays taken until the
	// completion has been consumed: Core.ReleaseSend(Slot) for a send,
	// and for a receive the RecvSource's release (Core.ReleaseRecv for
	// the Core's own receive queue).
	Slot uint64
}
