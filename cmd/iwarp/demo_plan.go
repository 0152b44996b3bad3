package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/goiwarp/iwarp"
)

// demoStep is one row of the demo: count operations of one kind, each
// moving size bytes (-1: the operation moves no data), timed and verified
// by run.
type demoStep struct {
	op    string
	size  int
	count int
	run   func(e *demoEnv) (time.Duration, error)
}

// demoRow is a step's outcome.
type demoRow struct {
	step demoStep
	d    time.Duration
	err  error
}

// demoOp is an operation from one side to the other moving n bytes.
type demoOp func(ctx context.Context, from, to *demoSide, n int) (time.Duration, error)

// demoSizes is the size sweep of Send, RDMA Write and RDMA Read: the
// sizes below that are at most max, and max itself.
func demoSizes(max int) []int {
	var s []int
	for _, n := range []int{0, 1, 4095, 64 << 10, 1 << 20} {
		if n < max {
			s = append(s, n)
		}
	}
	return append(s, max)
}

// demoExtSizes are the sizes of the extensions' data operations: those
// of 0, 4 KiB and 1 MiB that are at most max.
func demoExtSizes(max int) []int {
	var s []int
	for _, n := range []int{0, 4096, 1 << 20} {
		if n <= max {
			s = append(s, n)
		}
	}
	return s
}

// demoPlan lists the steps for a connection with attributes a.
func demoPlan(a iwarp.QPAttributes, max int) []demoStep {
	var p []demoStep
	sized := func(name string, sizes []int, op demoOp) {
		for _, n := range sizes {
			p = append(p, demoStep{op: name, size: n, count: 1, run: func(e *demoEnv) (time.Duration, error) {
				return op(e.ctx, e.init, e.resp, n)
			}})
		}
	}
	one := func(name string, size, count int, run func(e *demoEnv) (time.Duration, error)) {
		p = append(p, demoStep{op: name, size: size, count: count, run: run})
	}
	sweep := demoSizes(max)
	sized("Send", sweep, demoSend)
	sized("RDMA Write", sweep, demoWrite)
	sized("RDMA Read", sweep, demoRead)
	small := min(4096, max)
	sized("Send with Invalidate", []int{small}, demoSendInvalidate)
	one("Local Invalidate (then Rekey and Read)", -1, 1, demoLocalInvalidate)
	sized("RDMA Read with Invalidate", []int{small}, demoReadInvalidate)
	one("Send with Solicited Event (armed CQ)", 0, 2, demoSolicited)
	one("Send into a shared receive queue (2 QPs)", small, demoSRQSends, func(e *demoEnv) (time.Duration, error) {
		return demoSRQ(e, small)
	})
	if a.RFC7306 {
		one("FetchAdd (RFC 7306)", 8, demoFetchAdds, atomicStep(demoFetchAdd))
		one("FetchAdd with add mask", 8, 2, atomicStep(demoFetchAddMasked))
		one("CompareSwap", 8, 2, atomicStep(demoCompareSwap))
		one("CompareSwap with compare and swap masks", 8, 3, atomicStep(demoCompareSwapMasked))
		one("Immediate Data (RFC 7306, solicited)", 8, 1, func(e *demoEnv) (time.Duration, error) {
			return demoImmediate(e.ctx, e.init, e.resp)
		})
		sized("Write with Immediate", demoExtSizes(max), demoWriteImm)
	}
	if a.V2 {
		sized("Send with Immediate (V2)", demoExtSizes(max), demoSendImm)
		sized("RDMA Read V2 (2 SGEs)", demoExtSizes(max), demoReadV2)
	}
	return p
}

// writeDemoTable prints the rows: operation, size, count, time, rate
// (bytes per second for data of 4 KiB or more, else operations per second
// for steps of several operations) and result, last, so that a failure's
// message does not push the other columns apart.
func writeDemoTable(w io.Writer, rows []demoRow) {
	cells := [][]string{{"operation", "size", "count", "time", "rate", "result"}}
	for _, r := range rows {
		size := "-"
		if r.step.size >= 0 {
			size = strconv.Itoa(r.step.size)
		}
		rate := "-"
		if bytes := r.step.size * r.step.count; bytes >= 4096 && r.d > 0 {
			rate = fmt.Sprintf("%.0f MB/s", float64(bytes)/r.d.Seconds()/1e6)
		} else if r.step.count > 1 && r.d > 0 {
			rate = fmt.Sprintf("%.0f op/s", float64(r.step.count)/r.d.Seconds())
		}
		res := "verified"
		if r.err != nil {
			res = "FAILED: " + r.err.Error()
		}
		cells = append(cells, []string{r.step.op, size, strconv.Itoa(r.step.count), r.d.Round(time.Microsecond).String(), rate, res})
	}
	width := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], len(c))
		}
	}
	for _, row := range cells { // names left-aligned, numbers right-aligned
		fmt.Fprintf(w, "%-*s  %*s  %*s  %*s  %*s  %s\n", width[0], row[0], width[1], row[1], width[2], row[2],
			width[3], row[3], width[4], row[4], row[5])
	}
}
