package perf

import (
	"fmt"
	"strings"
)

// Op is one data operation a run measures.
type Op uint8

// The operations, in the order ParseOps("all") returns them.
const (
	Send Op = iota + 1
	Write
	Read
	FetchAdd
	CmpSwap
	WriteImm
	SendImm
	ReadV2
	// opIdle and opStat are not measured operations: an idle QP for the
	// memory target, and a request for the server's memory statistics.
	opIdle
	opStat
)

var opTable = []struct {
	op   Op
	name string
}{
	{Send, "send"}, {Write, "write"}, {Read, "read"}, {FetchAdd, "fetchadd"},
	{CmpSwap, "cmpswap"}, {WriteImm, "write-imm"}, {SendImm, "send-imm"}, {ReadV2, "read-v2"},
}

// String is the operation's name, as ParseOps takes it.
func (o Op) String() string {
	for _, e := range opTable {
		if e.op == o {
			return e.name
		}
	}
	return fmt.Sprintf("op%d", uint8(o))
}

// OpNames are the names of the operations.
func OpNames() []string {
	var n []string
	for _, e := range opTable {
		n = append(n, e.name)
	}
	return n
}

// ParseOps parses a comma-separated list of operation names, or "all".
func ParseOps(s string) ([]Op, error) {
	if s == "all" {
		var ops []Op
		for _, e := range opTable {
			ops = append(ops, e.op)
		}
		return ops, nil
	}
	var ops []Op
next:
	for _, name := range strings.Split(s, ",") {
		for _, e := range opTable {
			if e.name == name {
				ops = append(ops, e.op)
				continue next
			}
		}
		return nil, fmt.Errorf("unknown operation %q (have %s)", name, strings.Join(OpNames(), ", "))
	}
	return ops, nil
}

// atomic reports whether the operation works on 8 bytes whatever the size.
func (o Op) atomic() bool { return o == FetchAdd || o == CmpSwap }

// consumesRecv reports whether each operation takes a receive at the
// server, so that the client needs credits.
func (o Op) consumesRecv() bool { return o == Send || o == WriteImm || o == SendImm }

// sizeOf returns the message size the operation moves for a requested size.
func (o Op) sizeOf(n int) int {
	if o.atomic() {
		return 8
	}
	return n
}
