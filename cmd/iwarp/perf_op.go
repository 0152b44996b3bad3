package main

import (
	"fmt"
	"strings"
)

// perfOp is one operation "iwarp perf" measures.
type perfOp uint8

const (
	perfSend perfOp = iota + 1
	perfWrite
	perfRead
	perfFetchAdd
	perfCmpSwap
	perfWriteImm
	perfSendImm
	perfReadV2
	// perfIdle and perfStat are not measured operations: an idle QP for the
	// memory target, and a request for the server's memory statistics.
	perfIdle
	perfStat
)

var perfOpTable = []struct {
	op   perfOp
	name string
}{
	{perfSend, "send"}, {perfWrite, "write"}, {perfRead, "read"}, {perfFetchAdd, "fetchadd"},
	{perfCmpSwap, "cmpswap"}, {perfWriteImm, "write-imm"}, {perfSendImm, "send-imm"}, {perfReadV2, "read-v2"},
}

func (o perfOp) String() string {
	for _, e := range perfOpTable {
		if e.op == o {
			return e.name
		}
	}
	return fmt.Sprintf("op%d", uint8(o))
}

func perfOpNames() []string {
	var n []string
	for _, e := range perfOpTable {
		n = append(n, e.name)
	}
	return n
}

// parsePerfOps parses -op.
func parsePerfOps(s string) ([]perfOp, error) {
	if s == "all" {
		var ops []perfOp
		for _, e := range perfOpTable {
			ops = append(ops, e.op)
		}
		return ops, nil
	}
	var ops []perfOp
next:
	for _, name := range strings.Split(s, ",") {
		for _, e := range perfOpTable {
			if e.name == name {
				ops = append(ops, e.op)
				continue next
			}
		}
		return nil, fmt.Errorf("unknown operation %q (have %s)", name, strings.Join(perfOpNames(), ", "))
	}
	return ops, nil
}

// atomic reports whether the operation works on 8 bytes whatever the size.
func (o perfOp) atomic() bool { return o == perfFetchAdd || o == perfCmpSwap }

// consumesRecv reports whether each operation takes a receive at the
// server, so that the client needs credits.
func (o perfOp) consumesRecv() bool { return o == perfSend || o == perfWriteImm || o == perfSendImm }

// sizeOf returns the message size the operation moves for a requested size.
func (o perfOp) sizeOf(n int) int {
	if o.atomic() {
		return 8
	}
	return n
}
