package fpdubench

import (
	"fmt"
	"strings"
)

// Case is one measured configuration with its target.
type Case struct {
	Name   string
	Size   int     // FPDU size on the wire
	CRC    bool    // CRC32c on both sides
	Rate   bool    // the target is FPDUs received per second, not a ratio
	Target float64 // minimum ratio to raw TCP, or minimum FPDUs/s
}

// Cases are the framing layer's throughput tripwires (docs/fpdu.md):
// 64 KiB FPDUs (direct placement), 1460-octet FPDUs (what an Ethernet MSS
// gives; bulk read and copy) and 88-octet FPDUs (per-FPDU cost), first
// without CRC, then with CRC on both sides.
var Cases = []Case{
	{"64KiB", 65536, false, false, 0.90},
	{"1.4KiB", 1460, false, false, 0.60},
	{"88B", 88, false, true, 3e6},
	{"64KiB+crc", 65536, true, false, 0.90},
	{"1.4KiB+crc", 1460, true, false, 0.60},
	{"88B+crc", 88, true, true, 3e6},
}

// CaseNames are the names of Cases.
func CaseNames() []string {
	names := make([]string, len(Cases))
	for i, c := range Cases {
		names[i] = c.Name
	}
	return names
}

// SelectCases returns the cases named in the comma-separated list s, in
// the order of Cases ("": all of them). A name that is not a case is an
// error that names the valid ones.
func SelectCases(s string) ([]Case, error) {
	if s == "" {
		return Cases, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		found := false
		for _, c := range Cases {
			found = found || c.Name == n
		}
		if !found {
			return nil, fmt.Errorf("unknown case %q (have %s)", n, strings.Join(CaseNames(), ", "))
		}
		want[n] = true
	}
	var out []Case
	for _, c := range Cases {
		if want[c.Name] {
			out = append(out, c)
		}
	}
	return out, nil
}

// Result holds the medians of one case.
type Result struct {
	TCPMBps, FPDUMBps float64 // throughput, 10^6 octets per second
	Ratio             float64 // median of the per-pair FPDU/TCP throughput ratios
	FPDUsPerSec       float64
}

// Goal is the case's target as printed: ">=0.90x" or ">=3.0M/s".
func (c Case) Goal() string {
	if c.Rate {
		return fmt.Sprintf(">=%.1fM/s", c.Target/1e6)
	}
	return fmt.Sprintf(">=%.2fx", c.Target)
}

// Pass reports whether r meets the case's target.
func (c Case) Pass(r Result) bool {
	if c.Rate {
		return r.FPDUsPerSec >= c.Target
	}
	return r.Ratio >= c.Target
}
