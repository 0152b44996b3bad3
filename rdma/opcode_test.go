package rdma

import "testing"

// TestValidFlagsTable: the variants each opcode takes, and bits that are
// no flag refused.
func TestValidFlagsTable(t *testing.T) {
	for _, c := range []struct {
		op   Opcode
		f    SendFlags
		want bool
	}{
		{OpSend, Solicited | Invalidate | WithImmediate | Signaled | Fence | Inline, true},
		{OpWrite, WithImmediate | Solicited, true},
		{OpWrite, Solicited, false},
		{OpWrite, Invalidate, false},
		{OpRead, Invalidate | Fence, true},
		{OpRead, WithImmediate, false},
		{OpFetchAdd, Solicited, false},
		{OpImmediate, Solicited, true},
		{OpRecv, 0, false},
		{OpBindWindow + 1, 0, false},
		{OpSend, 0x40, false},
		{OpSend, 0x80 | Signaled, false},
	} {
		if got := ValidFlags(c.op, c.f); got != c.want {
			t.Errorf("ValidFlags(%v, %#x) = %v, want %v", c.op, c.f, got, c.want)
		}
	}
}
