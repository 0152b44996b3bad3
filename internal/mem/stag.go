package mem

import "fmt"

// STag is a Steering Tag (RFC 5040 §2.1): a 24-bit index into the device's
// STag table and an 8-bit key chosen by the owner, as Linux siw lays it out.
// Index 0 is never used.
type STag uint32

// MakeSTag builds an STag from a table index (24 bits) and a key.
func MakeSTag(index uint32, key uint8) STag { return STag(index<<8 | uint32(key)) }

// Index returns the 24-bit table index.
func (s STag) Index() uint32 { return uint32(s) >> 8 }

// Key returns the 8-bit key.
func (s STag) Key() uint8 { return uint8(s) }

// String formats the STag as 0x%08x.
func (s STag) String() string { return fmt.Sprintf("0x%08x", uint32(s)) }

// maxIndex is the largest table index (24 bits).
const maxIndex = 1<<24 - 1
