package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
)

func init() {
	register(&command{
		name:  "benchfpdu",
		short: "measure FPDU stream throughput against raw TCP (two processes, loopback)",
		run:   runBenchFPDU,
	})
}

// benchCase is one measured configuration with its architecture target.
type benchCase struct {
	name   string
	size   int     // FPDU size on the wire
	crc    bool    // CRC32c on both sides
	rate   bool    // the target is FPDUs received per second, not a ratio
	target float64 // minimum ratio to raw TCP, or minimum FPDUs/s
}

// benchCases are the framing layer's throughput tripwires (docs/fpdu.md): 64 KiB FPDUs (direct placement), 1460-octet FPDUs (what an
// Ethernet MSS gives; bulk read and copy) and 88-octet FPDUs (per-FPDU
// cost), first without CRC, then with CRC on both sides.
var benchCases = []benchCase{
	{"64KiB", 65536, false, false, 0.90},
	{"1.4KiB", 1460, false, false, 0.60},
	{"88B", 88, false, true, 3e6},
	{"64KiB+crc", 65536, true, false, 0.90},
	{"1.4KiB+crc", 1460, true, false, 0.60},
	{"88B+crc", 88, true, true, 3e6},
}

// runBenchFPDU is "iwarp benchfpdu".
func runBenchFPDU(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchfpdu", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pairs := fs.Int("pairs", 9, "interleaved raw-TCP/FPDU trial pairs per case (the median ratio is reported)")
	trial := fs.Duration("trial", 250*time.Millisecond, "approximate duration of one trial")
	strict := fs.Bool("strict", false, "exit with status 1 if any case misses its target")
	only := fs.String("cases", "", "comma-separated case names to run (default: all)")
	child := fs.Bool("child", false, "run as the receiving child (internal)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: iwarp benchfpdu [-pairs N] [-trial D] [-cases NAME,...] [-strict]")
		fmt.Fprintln(stderr, "Measures MPA FPDU stream throughput (internal/fpdu) against raw Go TCP in one run:")
		fmt.Fprintln(stderr, "this process sends, a re-executed child receives, over loopback TCP with TCP_NODELAY.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *child {
		return runBenchChild(os.Stdin, stdout, stderr)
	}
	if *pairs < 1 || *trial <= 0 {
		fmt.Fprintln(stderr, "benchfpdu: -pairs must be at least 1 and -trial positive")
		return 2
	}
	addr, stop, err := benchChild()
	if err != nil {
		fmt.Fprintln(stderr, "benchfpdu:", err)
		return 1
	}
	defer stop()

	fmt.Fprintf(stdout, "benchfpdu: sender pid %d, receiver child, loopback TCP (TCP_NODELAY), %d interleaved pairs of ~%v trials per case%s\n",
		os.Getpid(), *pairs, *trial, loadAverage())
	fmt.Fprintf(stdout, "%-11s %6s %10s %10s %7s %12s %10s %s\n", "case", "size", "tcp MB/s", "fpdu MB/s", "ratio", "FPDUs/s", "target", "result")
	failed := false
	for _, bc := range benchCases {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), bc.name) {
			continue
		}
		res, err := measureCase(addr, bc, *pairs, *trial)
		if err != nil {
			fmt.Fprintf(stderr, "benchfpdu: %s: %v\n", bc.name, err)
			return 1
		}
		value, target := res.ratio, fmt.Sprintf(">=%.2fx", bc.target)
		if bc.rate {
			value, target = res.fpdusPerSec, fmt.Sprintf(">=%.1fM/s", bc.target/1e6)
		}
		verdict := "PASS"
		if value < bc.target {
			verdict, failed = "FAIL", true
		}
		fmt.Fprintf(stdout, "%-11s %6d %10.0f %10.0f %6.2fx %12.0f %10s %s\n",
			bc.name, bc.size, res.tcpMBps, res.fpduMBps, res.ratio, res.fpdusPerSec, target, verdict)
	}
	if failed && *strict {
		return 1
	}
	return 0
}

// caseResult holds the medians of one case.
type caseResult struct {
	tcpMBps, fpduMBps float64
	ratio             float64 // median of per-pair FPDU/TCP throughput ratios
	fpdusPerSec       float64
}

// measureCase calibrates the trial size, then runs interleaved pairs
// (alternating which of the two goes first).
func measureCase(addr string, bc benchCase, pairs int, trial time.Duration) (caseResult, error) {
	count := max(64, (4<<20)/bc.size)
	d, err := runTrial(addr, trialDesc{kind: trialFPDU, crc: bc.crc, size: bc.size, count: count})
	if err != nil {
		return caseResult{}, err
	}
	count = max(64, int(float64(count)*float64(trial)/float64(max(d, time.Microsecond))))
	var ratios, tcps, fpdus []float64
	for i := range pairs {
		kinds := []byte{trialTCP, trialFPDU}
		if i%2 == 1 {
			kinds[0], kinds[1] = kinds[1], kinds[0]
		}
		var dt [3]time.Duration
		for _, k := range kinds {
			d, err := runTrial(addr, trialDesc{kind: k, crc: bc.crc, size: bc.size, count: count})
			if err != nil {
				return caseResult{}, err
			}
			dt[k] = d
		}
		bytes := float64(bc.size * count)
		tcp, fp := bytes/dt[trialTCP].Seconds(), bytes/dt[trialFPDU].Seconds()
		tcps, fpdus = append(tcps, tcp/1e6), append(fpdus, fp/1e6)
		ratios = append(ratios, fp/tcp)
	}
	fp := median(fpdus)
	return caseResult{
		tcpMBps:     median(tcps),
		fpduMBps:    fp,
		ratio:       median(ratios),
		fpdusPerSec: fp * 1e6 / float64(bc.size),
	}, nil
}

// loadAverage returns ", load average X Y Z" where the system tells it:
// numbers measured on a busy machine are worth less.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return ", load average " + strings.Join(f[:3], " ")
}

// median returns the median of v (v is reordered).
func median(v []float64) float64 {
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// runTrial sends one trial to the child and returns the time from the
// first octet sent to the child's acknowledgement.
func runTrial(addr string, d trialDesc) (time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	tc := c.(*net.TCPConn)
	if err := tc.SetNoDelay(true); err != nil {
		return 0, err
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := c.Write(d.encode()); err != nil {
		return 0, err
	}
	// Both kinds write the same octets in the same batches: about 16 KiB,
	// or one FPDU when larger, per system call.
	batch := max(1, (16<<10)/d.size)
	start := time.Now()
	if d.kind == trialTCP {
		err = sendTCP(c, d, batch)
	} else {
		err = sendFPDU(c, d, batch)
	}
	if err != nil {
		return 0, err
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		return 0, fmt.Errorf("no acknowledgement: %v", err)
	}
	return time.Since(start), nil
}

// sendTCP writes count messages of d.size octets, batch per Write.
func sendTCP(c net.Conn, d trialDesc, batch int) error {
	buf := make([]byte, d.size*batch)
	for i := 0; i < d.count; i += batch {
		if _, err := c.Write(buf[:d.size*min(batch, d.count-i)]); err != nil {
			return err
		}
	}
	return nil
}

// sendFPDU frames count FPDUs of d.size octets on the wire (a 14-octet
// header and the payload), batch per Flush.
func sendFPDU(c net.Conn, d trialDesc, batch int) error {
	w := fpdu.NewConn(c, fpdu.Options{CRC: d.crc}).Writer()
	ulpdu := ulpduForSize(d.size)
	hdr, payload := make([]byte, 14), make([]byte, ulpdu-14)
	for i := range d.count {
		if err := w.Append(hdr, payload); err != nil {
			return err
		}
		if (i+1)%batch == 0 || i == d.count-1 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}
