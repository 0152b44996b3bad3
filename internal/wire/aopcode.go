package wire

import "fmt"

// AOpCode is the Atomic Operation Code of an RFC 7306 Atomic Request
// (RFC 7306 §5.1, the low 4 bits of the header's first word).
type AOpCode uint8

// The atomic operations of RFC 7306 §5.1. Code 0x1 (a plain Swap in early
// drafts) is reserved.
const (
	AOpFetchAdd AOpCode = 0x0 // Fetch and Add, with optional Add Mask
	AOpCmpSwap  AOpCode = 0x2 // Compare and Swap, with Compare and Swap Masks
)

// Known reports whether op is FetchAdd or CmpSwap.
func (op AOpCode) Known() bool { return op == AOpFetchAdd || op == AOpCmpSwap }

// String returns "FetchAdd", "CmpSwap" or "AOpCode 0xN".
func (op AOpCode) String() string {
	switch op {
	case AOpFetchAdd:
		return "FetchAdd"
	case AOpCmpSwap:
		return "CmpSwap"
	}
	return fmt.Sprintf("AOpCode 0x%X", uint8(op))
}
