package perf

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config is what one run measures.
type Config struct {
	Ops      []Op
	Modes    []string      // "bw" (bandwidth, message rate), "lat" (latency)
	Sizes    []int         // message sizes (atomics always move 8 bytes)
	Iters    int           // operations per test; 0: run for Duration
	Duration time.Duration // per test when Iters is 0
	Depth    int           // work requests in flight per QP (bandwidth tests)
	QPs      int           // QPs per test, each driven by its own goroutine
	CRC      bool          // MPA CRCs on both sides
	// Slots is, for Write and Read bandwidth tests, how many
	// message-size buffers each QP cycles through on each side (0 is 1):
	// the memory a test touches, and so how much of it the caches hold.
	Slots    int
	Progress bool // a progress line, rewritten in place (a terminal)

	// RunVsTCP's settings.
	Pairs   int           // interleaved pairs per target
	Trial   time.Duration // duration of each trial
	IdleQPs int           // idle connected QPs for the memory target
	LoadQPs int           // QPs writing at once for the aggregate target
	Targets []string      // target keys to run (TargetKeys); nil: all
}

// Bounds of a Config's values.
const (
	MaxSize    = 64 << 20 // the largest message size
	MaxDepth   = 4096     // the most work requests in flight, and QPs per test
	MaxIdleQPs = 100_000  // the most idle QPs of the memory target
	MaxSlots   = 1024     // the most buffers of Config.Slots (at most MaxSize of them)
)

// TargetKeys are the keys of RunVsTCP's targets, in the order they run.
// cpu and cpu-crc are judged on the pairs of write and write-crc (either
// key runs them).
var TargetKeys = []string{"write", "cpu", "write-crc", "cpu-crc", "read", "read-crc", "send64", "send64-crc",
	"write-imm-lat", "fetchadd-lat", "resp-lat", "rate16", "qps", "allocs", "idle", "extra"}

// ParseTargets parses a comma-separated list of target keys ("" is all,
// nil).
func ParseTargets(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	keys := strings.Split(s, ",")
	for _, k := range keys {
		if !slices.Contains(TargetKeys, k) {
			return nil, fmt.Errorf("unknown target %q (have %s)", k, strings.Join(TargetKeys, ", "))
		}
	}
	return keys, nil
}

// ParseModes parses a comma-separated list of modes: bw, lat, or both.
func ParseModes(s string) ([]string, error) {
	var modes []string
	for _, m := range strings.Split(s, ",") {
		switch m {
		case "bw", "lat":
			modes = append(modes, m)
		case "both":
			modes = append(modes, "bw", "lat")
		default:
			return nil, fmt.Errorf("unknown mode %q (have bw, lat, both)", m)
		}
	}
	return modes, nil
}

// check reports a configuration no run can use.
func (c *Config) check(vsTCP bool) error {
	switch {
	case vsTCP && (c.Pairs < 1 || c.Trial <= 0 || c.IdleQPs < 1 || c.IdleQPs > MaxIdleQPs || c.LoadQPs < 1 || c.LoadQPs > MaxDepth):
		return fmt.Errorf("bad comparison settings: %d pairs of %v trials, %d idle QPs, %d loaded QPs", c.Pairs, c.Trial, c.IdleQPs, c.LoadQPs)
	case vsTCP:
		return nil
	case len(c.Ops) == 0 || len(c.Modes) == 0 || len(c.Sizes) == 0:
		return fmt.Errorf("nothing to measure: %d operations, %d modes, %d sizes", len(c.Ops), len(c.Modes), len(c.Sizes))
	case c.Iters < 0 || (c.Iters == 0 && c.Duration <= 0):
		return fmt.Errorf("no length of test: %d operations, %v", c.Iters, c.Duration)
	case c.Depth < 1 || c.Depth > MaxDepth || c.QPs < 1 || c.QPs > MaxDepth:
		return fmt.Errorf("depth %d and QPs %d must be 1..%d", c.Depth, c.QPs, MaxDepth)
	case c.Slots < 0 || c.Slots > MaxSlots:
		return fmt.Errorf("slots %d out of range 1..%d", c.Slots, MaxSlots)
	}
	for _, s := range c.Sizes {
		if s < 1 || s > MaxSize {
			return fmt.Errorf("size %d out of range 1..%d", s, MaxSize)
		}
		if int64(max(c.Slots, 1))*int64(s) > MaxSize {
			return fmt.Errorf("%d slots of %d bytes are over %d bytes", c.Slots, s, MaxSize)
		}
	}
	return nil
}
