package rdma

// Opcode is the operation of a work request or a completion. The variants
// of an operation (a Send with Solicited Event, with Invalidate, with
// Immediate Data) are its SendFlags, not opcodes of their own: ValidFlags
// says which flags each opcode takes.
type Opcode uint8

// Operations (RFC 5040 §5, RFC 7306, the RDMAP Extensions V2 draft).
const (
	// OpSend sends a message into the peer's next posted receive (RFC 5040
	// §5.3). Flags: Solicited, Invalidate (the peer's STag
	// SendWR.InvalidateSTag is invalidated once the message is placed),
	// WithImmediate (the V2 draft's Send with Immediate Data: Immediate
	// arrives in the peer's completion).
	OpSend Opcode = iota + 1
	// OpWrite writes the local SGL into the peer's memory (RFC 5040 §5.1).
	// Flags: WithImmediate (RFC 7306 Write with Immediate: the peer's
	// receive completion, with the 8 bytes, follows the placed Write), and
	// Solicited with it.
	OpWrite
	// OpRead reads the peer's memory into the local SGL (RFC 5040 §5.2).
	// Flags: Invalidate (Read with Local Invalidate: the sink's STag is
	// invalidated once the data has been placed).
	OpRead
	// OpRecv is the opcode of a receive completion.
	OpRecv
	// OpFetchAdd is the RFC 7306 Atomic FetchAdd (§5.1.1): add to the 8
	// bytes at Remote (per field, under the Add Mask) and return the
	// original value.
	OpFetchAdd
	// OpCompareSwap is the RFC 7306 Atomic CmpSwap (§5.1.2): where the 8
	// bytes at Remote equal Compare on the bits of CompareMask, replace the
	// bits of SwapMask with Swap's; return the original value either way.
	OpCompareSwap
	// OpImmediate sends RFC 7306 Immediate Data alone (§6): 8 bytes that
	// consume one receive at the peer and arrive in its completion. Flags:
	// Solicited.
	OpImmediate
	// OpLocalInvalidate invalidates the local STag SendWR.InvalidateSTag,
	// in send-queue order (nothing is sent).
	OpLocalInvalidate
	// OpReadV2 is the V2 draft's RDMA Read V2: the request names only the
	// peer's source buffer; the response lands in the SGL, untagged.
	OpReadV2
	// OpBindWindow binds the type 2 memory window whose STag is
	// SendWR.Window to the bytes of a local region the SGL's single SGE
	// names, with the rights SendWR.Access, in send-queue order (RFC 5040
	// §2's Memory Window; libibverbs' IBV_WR_BIND_MW). Nothing is sent; the
	// window's new STag is valid once the WR completes.
	OpBindWindow
)

var opcodeNames = [...]string{OpSend: "Send", OpWrite: "Write", OpRead: "Read", OpRecv: "Recv",
	OpFetchAdd: "FetchAdd", OpCompareSwap: "CompareSwap", OpImmediate: "Immediate",
	OpLocalInvalidate: "LocalInvalidate", OpReadV2: "ReadV2", OpBindWindow: "BindWindow"}

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
	// Fence makes the WR wait until every earlier RDMA Read and atomic on
	// the QP has completed (RFC 5040 §5.5).
	Fence
	// Inline copies the payload at post time: the buffers are free again
	// when the post returns.
	Inline
	// Solicited asks for a solicited event at the receiver (RFC 5040
	// §5.3): it wakes a CQ armed for solicited completions only.
	Solicited
	// Invalidate: a Send also invalidates the peer's STag
	// SendWR.InvalidateSTag (Send with Invalidate, RFC 5040 §5.3); a Read
	// also invalidates its sink's local STag (Read with Local Invalidate).
	Invalidate
	// WithImmediate: a Write or a Send also carries SendWR.Immediate to the
	// peer's receive completion (RFC 7306 §6 Write with Immediate, the V2
	// draft's Send with Immediate).
	WithImmediate
)

// modifiers are the flags that make a variant of an operation.
const modifiers = Solicited | Invalidate | WithImmediate

// variants are the modifier combinations each opcode accepts.
var variants = [...][]SendFlags{
	OpSend:            {0, Solicited, Invalidate, Solicited | Invalidate, WithImmediate, Solicited | WithImmediate, Invalidate | WithImmediate, modifiers},
	OpWrite:           {0, WithImmediate, WithImmediate | Solicited},
	OpRead:            {0, Invalidate},
	OpFetchAdd:        {0},
	OpCompareSwap:     {0},
	OpImmediate:       {0, Solicited},
	OpLocalInvalidate: {0},
	OpReadV2:          {0},
	OpBindWindow:      {0},
}

// ValidFlags reports whether f's Solicited, Invalidate and WithImmediate
// bits make a variant of o that exists (Signaled, Fence and Inline go with
// any operation; whether Inline fits is for the queue to say). A bit that
// is no flag makes it false.
func ValidFlags(o Opcode, f SendFlags) bool {
	if int(o) >= len(variants) || f&^(Signaled|Fence|Inline|modifiers) != 0 {
		return false
	}
	for _, v := range variants[o] {
		if f&modifiers == v {
			return true
		}
	}
	return false
}

// Extension returns the RDMAP extension an operation with these flags
// needs the peer to support: ExtRFC7306 for atomics, Immediate Data and
// Write with Immediate; ExtV2 for Send with Immediate and Read V2; 0 for
// the RFC 5040 operations.
func Extension(o Opcode, f SendFlags) Extensions {
	switch {
	case o == OpReadV2, o == OpSend && f&WithImmediate != 0:
		return ExtV2
	case o == OpFetchAdd, o == OpCompareSwap, o == OpImmediate, o == OpWrite && f&WithImmediate != 0:
		return ExtRFC7306
	}
	return 0
}
